/**
 * Consent keywords: an inbound text equal to one of the account's opt-out
 * keywords (STOP) opts the contact out, one of its opt-in keywords (START)
 * opts it back in. Such a message starts no flow; an opt-out is answered with
 * the account's `opt_out_reply` while the customer's 24-hour window is open.
 */
import { eq } from "drizzle-orm";
import { setOptedOut } from "../contacts/contacts.js";
import { contacts } from "../db/schema/index.js";
import type { AppDeps } from "../deps.js";
import { sendAgentText } from "../inbox/send.js";
import { isWindowOpen } from "../inbox/window.js";
import { DEFAULT_SETTINGS, getSettings, matchesKeyword } from "../settings/settings.js";
import type { InboundMessageStored } from "./webhook-store.js";

/**
 * Applies a consent keyword; true when the message was one (the caller then
 * offers it to no flow). A redelivered keyword changes nothing and sends no
 * second reply.
 */
export async function applyConsentKeyword(
  deps: Pick<AppDeps, "db" | "cipher" | "graph" | "now" | "log" | "sends">,
  message: InboundMessageStored,
): Promise<boolean> {
  // Keywords are at most 64 characters (settings): a longer text needs no look at them.
  // A text, or the title of a tapped button (a campaign's quick-reply "STOP", say).
  if (!["text", "button", "interactive"].includes(message.messageType)) return false;
  if (!message.text || message.text.trim().length > 64) return false;
  // Read while storing the message (webhook-store.ts), else now.
  const settings =
    message.consent !== undefined
      ? (message.consent ?? DEFAULT_SETTINGS)
      : await getSettings(deps.db, message.accountId);
  const optOut = matchesKeyword(message.text, settings.optOutKeywords);
  const optIn = !optOut && matchesKeyword(message.text, settings.optInKeywords);
  if (!optOut && !optIn) return false;
  const now = deps.now();
  const changed = await setOptedOut(deps.db, { contactId: message.contactId, optedOut: optOut, now });
  const reply = settings.optOutReply;
  if (
    !changed ||
    !optOut ||
    !reply ||
    !isWindowOpen({ customerMessageAt: message.customerMessageAt ?? null }, now)
  ) {
    return true;
  }
  const [contact] = await deps.db
    .select({ phone: contacts.phone })
    .from(contacts)
    .where(eq(contacts.id, message.contactId));
  try {
    await sendAgentText(deps, {
      accountId: message.accountId,
      userId: null,
      sender: "bot",
      conversationId: message.conversationId,
      contactPhone: contact?.phone ?? null,
      text: reply,
    });
  } catch (error) {
    // The opt-out stands; the failed reply shows in the conversation.
    deps.log.warn({ reason: (error as Error).message }, "opt-out reply could not be sent");
  }
  return true;
}
