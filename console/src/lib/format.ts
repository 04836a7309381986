const timeFormat = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit" });
const dayFormat = new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric" });
const fullFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });

/** A time today, a date otherwise. */
export function shortTime(iso: string | null | undefined) {
  if (!iso) return "";
  const date = new Date(iso);
  const today = new Date();
  return date.toDateString() === today.toDateString() ? timeFormat.format(date) : dayFormat.format(date);
}

export const fullTime = (iso: string | null | undefined) => (iso ? fullFormat.format(new Date(iso)) : "");

/** A contact's name, else its number, else @username (a customer who hides their number). */
export function contactLabel(contact: {
  name: string | null;
  phone: string | null;
  wa_id: string | null;
  username?: string | null;
}) {
  if (contact.name) return contact.name;
  if (contact.phone) return `+${contact.phone}`;
  if (contact.username) return `@${contact.username}`;
  return contact.wa_id && /^\d+$/.test(contact.wa_id) ? `+${contact.wa_id}` : "Unknown";
}

export function initials(name: string) {
  const parts = name
    .replace(/[^\p{L}\p{N} ]/gu, "")
    .trim()
    .split(/\s+/);
  return ((parts[0]?.[0] ?? "?") + (parts.length > 1 ? (parts.at(-1)?.[0] ?? "") : "")).toUpperCase();
}

export function messagePreview(
  m: { type: string; text: string | null; media?: { filename?: string } | null } | null,
) {
  if (!m) return "";
  if (m.text) return m.text;
  if (m.type === "image") return "Photo";
  if (m.type === "video") return "Video";
  if (m.type === "audio") return "Audio message";
  if (m.type === "document") return m.media?.filename ?? "Document";
  if (m.type === "sticker") return "Sticker";
  return m.type;
}

const longDay = new Intl.DateTimeFormat(undefined, { weekday: "long", month: "long", day: "numeric" });
const longDayYear = new Intl.DateTimeFormat(undefined, { dateStyle: "long" });

/** The local calendar day of a time, as a key: messages of one day share it. */
export const dayKey = (iso: string) => new Date(iso).toDateString();

/** "Today", "Yesterday", "Monday, March 3", or a date with its year when not this year. */
export function dayLabel(iso: string, now = new Date()) {
  const date = new Date(iso);
  const yesterday = new Date(now);
  yesterday.setDate(now.getDate() - 1);
  if (date.toDateString() === now.toDateString()) return "Today";
  if (date.toDateString() === yesterday.toDateString()) return "Yesterday";
  return date.getFullYear() === now.getFullYear() ? longDay.format(date) : longDayYear.format(date);
}

/**
 * A template's component of one type (BODY, HEADER, ...), as Meta lists it: the
 * document passes Meta's components through as objects, so only string fields count.
 */
export function templateComponent(
  template: { components: Record<string, unknown>[] } | undefined,
  type: "HEADER" | "BODY" | "FOOTER",
): { text: string | undefined; format: string | undefined } | undefined {
  const found = template?.components.find((c) => typeof c.type === "string" && c.type.toUpperCase() === type);
  if (!found) return undefined;
  return {
    text: typeof found.text === "string" ? found.text : undefined,
    format: typeof found.format === "string" ? found.format : undefined,
  };
}
