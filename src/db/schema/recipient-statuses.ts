// No imports: the console reads this list too (the campaign view's counts and filter).

/**
 * A recipient's place in its campaign. `sending`: claimed, its message row
 * and send job written; the send pipeline sends it and its recorded outcome
 * moves the recipient on (an unknown outcome stays `sending` until section
 * 10's resolution: see src/campaigns/send.ts). `unknown`: set only by
 * earlier versions (a send interrupted and never resolved).
 */
export const RECIPIENT_STATUSES = [
  "queued",
  "sending",
  "sent",
  "delivered",
  "read",
  "replied",
  "failed",
  "skipped",
  "deferred",
  "unknown",
] as const;
export type RecipientStatus = (typeof RECIPIENT_STATUSES)[number];
