import { ApiError } from "../http/errors.js";

/**
 * WhatsApp's customer service window: free-form messages (text, media,
 * buttons...) may be sent only within 24 hours of the customer's last
 * message, counted from Meta's timestamp of it. Outside it only approved
 * templates go out (Meta answers 131047 otherwise).
 */
export const WINDOW_MS = 24 * 60 * 60 * 1000;

export interface WindowFacts {
  /** Meta's timestamp of the customer's latest message; null when they never wrote. */
  customerMessageAt: Date | null;
}

/** When the window closes; null when the customer never wrote (it never opened). */
export function windowExpiresAt(conversation: WindowFacts): Date | null {
  return conversation.customerMessageAt
    ? new Date(conversation.customerMessageAt.getTime() + WINDOW_MS)
    : null;
}

export function isWindowOpen(conversation: WindowFacts, now: Date): boolean {
  const expires = windowExpiresAt(conversation);
  return expires !== null && now.getTime() < expires.getTime();
}

/** 422 for a free-form send outside the window; thrown before any upstream call. */
export function windowClosedError(conversation: WindowFacts): ApiError {
  return new ApiError(
    422,
    conversation.customerMessageAt
      ? "The 24-hour customer service window has closed: only an approved template can be sent now"
      : "The customer has not written yet: only an approved template can start the conversation",
    { code: "window_closed" },
  );
}

/** Throws windowClosedError unless a free-form message may go out now. */
export function requireOpenWindow(conversation: WindowFacts, now: Date) {
  if (!isWindowOpen(conversation, now)) throw windowClosedError(conversation);
}
