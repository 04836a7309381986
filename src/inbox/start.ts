import { and, desc, eq, sql } from "drizzle-orm";
import { pausedColumns } from "../bots/automation.js";
import { findByPhone } from "../contacts/contacts.js";
import type { Db } from "../db/client.js";
import { contacts, conversations, messages } from "../db/schema/index.js";
import type { AppDeps } from "../deps.js";
import { ApiError } from "../http/errors.js";
import { channelFor } from "../messaging/channel.js";
import { prepareTemplateSend, type TemplateRequest } from "../templates/service.js";
import { toUpstreamPhone } from "../upstream/graph.js";
import { toConversationJson } from "./json.js";
import { sendAgentText } from "./send.js";

/**
 * Starts (or resumes) a conversation with a phone number by sending it a
 * template, the only kind of message WhatsApp lets a business send first.
 * Every check that can fail runs before the contact is written.
 */
export async function startConversation(
  deps: Pick<AppDeps, "db" | "cipher" | "sends" | "now">,
  input: { accountId: string; userId: string; phone: string; name?: string; template: TemplateRequest },
) {
  const digits = toUpstreamPhone(input.phone);
  if (!digits || digits.length < 6 || digits.length > 15) {
    throw new ApiError(400, "phone must be a phone number with 6 to 15 digits (country code first)");
  }
  await channelFor(deps, input.accountId);
  const prepared = await prepareTemplateSend(deps.db, input.accountId, input.template);

  const now = deps.now();
  const thread = await deps.db.transaction(async (tx) => {
    // An existing contact keeps the name it has (the customer's own profile name, usually); one
    // found by its phone keeps the WhatsApp id Meta gave it (a rewritten number).
    const known = await findByPhone(tx, input.accountId, digits);
    const [knownRow] = known
      ? await tx.select({ waId: contacts.waId }).from(contacts).where(eq(contacts.id, known))
      : [];
    const [contact] = await tx
      .insert(contacts)
      .values({
        accountId: input.accountId,
        waId: knownRow?.waId ?? digits,
        name: input.name ?? null,
        phone: digits,
      })
      .onConflictDoUpdate({
        target: [contacts.accountId, contacts.waId],
        set: { name: sql`coalesce(${contacts.name}, excluded.name)`, updatedAt: now },
      })
      .returning({ id: contacts.id, phone: contacts.phone });
    // A conversation an agent starts begins paused: no flow answers in the agent's place.
    const [conversation] = await tx
      .insert(conversations)
      .values({
        accountId: input.accountId,
        contactId: contact!.id,
        lastMessageAt: now,
        ...pausedColumns("agent_started", null),
      })
      .onConflictDoUpdate({ target: conversations.contactId, set: { updatedAt: now } })
      .returning({ id: conversations.id });
    return { conversationId: conversation!.id, phone: contact!.phone };
  });

  const message = await sendAgentText(deps, {
    accountId: input.accountId,
    userId: input.userId,
    conversationId: thread.conversationId,
    contactPhone: thread.phone,
    text: prepared.text,
    outbound: prepared.outbound,
  });
  return { conversation: await conversationJson(deps.db, thread.conversationId), message };
}

/** A conversation as the inbox lists it: with its contact and last message. */
export async function conversationJson(db: Db, conversationId: string) {
  const [row] = await db
    .select({ conversation: conversations, contact: contacts })
    .from(conversations)
    .innerJoin(contacts, eq(contacts.id, conversations.contactId))
    .where(eq(conversations.id, conversationId));
  if (!row) throw new ApiError(404, "Not found");
  const [last] = await db
    .select()
    .from(messages)
    .where(and(eq(messages.conversationId, conversationId)))
    .orderBy(desc(messages.createdAt), desc(messages.id))
    .limit(1);
  return toConversationJson(row.conversation, row.contact, last ?? null);
}
