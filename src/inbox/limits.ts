/** Longest text of a message an agent sends or a note (WhatsApp's limit for a text body). */
export const MAX_TEXT_LENGTH = 4096;
