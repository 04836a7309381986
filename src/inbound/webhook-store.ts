import { and, eq, isNull, type SQL, sql } from "drizzle-orm";
import type { Db, DbOrTx } from "../db/client.js";
import { commitUnflushed } from "../db/commit.js";
import { pgErrorCode } from "../db/errors.js";
import { prepared } from "../db/prepared.js";
import { contacts, conversations, messageReactions, messages, messagingConfigs } from "../db/schema/index.js";
import {
  type ConsentSettings,
  type InboundMessageStored,
  type RunnerLookRow,
  runnerLookColumns,
  toRunnerLook,
} from "../flows/runner/look.js";
import { isUuid } from "../http/ids.js";
import { nextMessageTime, upsertThread } from "../inbox/threads.js";
import { STATUS_PREDECESSORS } from "../messaging/message-status.js";
import type {
  InboundMessage,
  InboundReaction,
  StatusUpdate,
  TemplateStatusChange,
  WebhookChange,
} from "../messaging/webhook-payload.js";
import { addJob } from "../queue/add.js";
import { DOWNLOAD_MEDIA_TASK, MEDIA_DOWNLOAD_ATTEMPTS, SETTLE_SEND_TASK } from "../queue/tasks.js";
import { applyTemplateStatus } from "../templates/service.js";
import { isBsuid, toUpstreamPhone } from "../upstream/graph.js";

export interface StoredChange {
  /** No account has the change's phone number: nothing was stored. */
  unknownNumber?: true;
  /**
   * Customer messages of this change, including those an earlier delivery
   * already stored (the runner's receipts keep it from acting twice; a job
   * retried after a crash must still offer them). Reactions excluded.
   */
  inbound: InboundMessageStored[];
  /** Parts skipped for a reason worth logging. */
  notes: string[];
}

interface Thread {
  contactId: string;
  conversationId: string;
}

/**
 * Stores one change of a webhook batch, for the account whose channel has
 * the change's phone number: messages (once per upstream id, however often
 * and however concurrently Meta delivers them), customer reactions and status
 * updates of outbound messages, all or nothing.
 */
export async function storeChange(
  db: Db,
  input: { change: WebhookChange; now: () => Date },
): Promise<StoredChange> {
  const { change } = input;
  const [only] = change.items;
  // What Meta sends most: one message and nothing else. Its one statement (which also finds the
  // account) is atomic on its own (a media message also adds its download job, so it takes the
  // transaction below). It and the lone status below commit without waiting for the disk
  // (commitUnflushed; so does the transaction below when it stores a customer message, which
  // takes the same statement): this job holds the delivery until a later commit that waits.
  if (change.items.length === 1 && only?.kind === "message" && !only.media && change.statuses.length === 0) {
    const stored = await withDeadlockRetry(() =>
      storeMessage(db, { phoneNumberId: change.phoneNumberId }, only, change, input.now),
    );
    if (stored === "unknown_number") return { unknownNumber: true, inbound: [], notes: [] };
    return { inbound: stored ? [stored] : [], notes: [] };
  }
  // What Meta sends most of all for a business that sends: one status of one of its messages
  // (sent, delivered, read: three a message). One statement, atomic on its own.
  const [status] = change.statuses;
  if (change.items.length === 0 && change.statuses.length === 1 && status) {
    const applied = await applyStatusAlone(db, change.phoneNumberId, status, input.now());
    if (applied.accountId === null) return { unknownNumber: true, inbound: [], notes: [] };
    // Not moved, and its callback data names a message still waiting for Meta's id: a send whose
    // answer was never recorded, resolved by applyStatus.
    if (!applied.namedPending) return { inbound: [], notes: [] };
    return storeInTransaction(db, { ...input, accountId: applied.accountId });
  }
  const [owner] = await db
    .select({ accountId: messagingConfigs.accountId })
    .from(messagingConfigs)
    .where(eq(messagingConfigs.phoneNumberId, change.phoneNumberId));
  if (!owner) return { unknownNumber: true, inbound: [], notes: [] };
  return storeInTransaction(db, { ...input, accountId: owner.accountId });
}

/** What a failed status without Meta's error records. */
const FAILED_WITHOUT_ERROR = { message: "Delivery failed" };

/** Fields of a message that a status update sets. */
const statusColumns = (update: StatusUpdate, now: Date) => ({
  status: update.status,
  ...(update.status === "failed" ? { error: update.error ?? FAILED_WITHOUT_ERROR } : {}),
  updatedAt: now,
});

/**
 * The statement that moves the account's outbound message a status names
 * forward (see STATUS_PREDECESSORS), returning its id; a stale or unknown
 * update changes nothing. `accountId` is an SQL expression.
 */
const moveByStatus = (accountId: SQL, update: StatusUpdate, now: Date) => sql`
  update ${messages}
     set status = ${update.status}::text,
         error = case when ${update.status}::text = 'failed'
                      then ${JSON.stringify(update.error ?? FAILED_WITHOUT_ERROR)}::jsonb
                      else error end,
         updated_at = ${now.toISOString()}::timestamptz
   where account_id = ${accountId}
     and message_id = ${update.upstreamId}::text
     and direction = 'outbound'
     and status = any(${sql.param(STATUS_PREDECESSORS[update.status])}::text[])
  returning id`;

/**
 * applyStatus's first step on its own, with the account found by the number
 * in the same statement: the account (null: no account has the number), and
 * whether, no message having moved, the status's callback data names one of
 * the account's messages still pending without Meta's id.
 */
async function applyStatusAlone(db: Db, phoneNumberId: string, update: StatusUpdate, now: Date) {
  const owner = sql`(select account_id from owner)`;
  const { rows } = await db.execute<{ account_id: string | null; named_pending: boolean }>(
    prepared(sql`
    with owner as (
      select account_id from ${messagingConfigs} where phone_number_id = ${phoneNumberId}::text
    ), moved as (${moveByStatus(owner, update, now)})
    select ${owner} as account_id, ${commitUnflushed} as unflushed,
           not exists (select 1 from moved) and exists (
             select 1 from ${messages}
              where id = ${isOurMessageId(update.callbackData) ? update.callbackData : null}::uuid
                and account_id = ${owner}
                and direction = 'outbound' and status = 'pending' and message_id is null) as named_pending`),
  );
  return { accountId: rows[0]?.account_id ?? null, namedPending: Boolean(rows[0]?.named_pending) };
}

function storeInTransaction(
  db: Db,
  input: { accountId: string; change: WebhookChange; now: () => Date },
): Promise<StoredChange> {
  const { change } = input;
  return withDeadlockRetry(() =>
    db.transaction(async (tx) => {
      const result: StoredChange = { inbound: [], notes: [] };
      const threads = new Map<string, Thread>();
      const thread = async (waId: string) => {
        let found = threads.get(waId);
        if (!found) {
          const name = change.profiles.get(waId) ?? null;
          found = await upsertThread(tx, { accountId: input.accountId, waId, name, now: input.now() });
          threads.set(waId, found);
        }
        return found;
      };

      for (const item of change.items) {
        if (item.kind === "reaction") {
          const note = await storeReaction(tx, input.accountId, item, thread);
          if (note) result.notes.push(`reaction ${item.upstreamId}: ${note}`);
          continue;
        }
        const found = await storeMessage(tx, { accountId: input.accountId }, item, change, input.now);
        // (The account is given here: its number cannot be unknown.)
        const stored = found === "unknown_number" ? null : found;
        if (stored) result.inbound.push(stored);
        // The file's URL expires 5 minutes after Meta hands it out: fetch it at once, in a job
        // that exists exactly when the message does.
        if (stored?.inserted && item.media) {
          await addJob(
            tx,
            DOWNLOAD_MEDIA_TASK,
            { message_id: stored.messageId },
            { jobKey: `${DOWNLOAD_MEDIA_TASK}:${stored.messageId}`, maxAttempts: MEDIA_DOWNLOAD_ATTEMPTS },
          );
        }
      }
      for (const update of change.statuses) await applyStatus(tx, input.accountId, update, input.now());
      return result;
    }),
  );
}

/**
 * Stores a customer message in one statement: the contact (created, or its
 * profile name refreshed), its conversation (created, or its activity moved
 * and a closed one reopened, unless the message is a redelivery), and the
 * message itself, once per upstream id. A concurrent delivery of the same
 * message waits on the conversation row, then finds the message there.
 */
async function storeMessage(
  db: DbOrTx,
  owner: { accountId: string } | { phoneNumberId: string },
  message: InboundMessage,
  change: WebhookChange,
  now: () => Date,
): Promise<(InboundMessageStored & { inserted: boolean }) | "unknown_number" | null> {
  const ownerSql =
    "accountId" in owner
      ? sql`select ${owner.accountId}::uuid as account_id, null::integer as messages_per_second`
      : sql`select account_id, messages_per_second from ${messagingConfigs}
             where phone_number_id = ${owner.phoneNumberId}`;
  const accountId = sql`(select account_id from owner)`;
  const createdAt = nextMessageTime(now());
  // The window runs from Meta's time of the message; our clock only when Meta gave none.
  const customerAt = message.timestamp ?? createdAt;
  const media = message.media ? { ...message.media, status: "pending" } : null;
  const json = (value: unknown) => (value === null || value === undefined ? null : JSON.stringify(value));
  const { rows } = await db.execute<
    {
      account_id: string;
      contact_id: string;
      conversation_id: string;
      has_inbound: boolean;
      customer_message_at: Date | string | null;
      message_id: string | null;
      inserted: boolean;
      consent: ConsentSettings | null;
      campaign_thread: boolean;
      send_limit: number | null;
    } & RunnerLookRow
  >(
    prepared(sql`
    with owner as (${ownerSql}),
    contact as (${contactUpsertSql(message, change, now())}), redelivery as (
      select exists (select 1 from ${messages} where account_id = ${accountId}
                     and message_id = ${message.upstreamId}) as yes
    ), conversation as (
      insert into ${conversations} (account_id, contact_id, last_message_at, customer_message_at, unread_count)
      select ${accountId}, contact.id, ${createdAt}, ${customerAt}, 1 from contact
      on conflict (contact_id) do update set
        last_message_at = case when (select yes from redelivery) then conversations.last_message_at
                          else greatest(conversations.last_message_at, excluded.last_message_at) end,
        customer_message_at = case when (select yes from redelivery) then conversations.customer_message_at
                              else greatest(conversations.customer_message_at, excluded.customer_message_at) end,
        unread_count = case when (select yes from redelivery) then conversations.unread_count
                       else conversations.unread_count + 1 end,
        status = case when conversations.status = 'closed' and not (select yes from redelivery) then 'open'
                 else conversations.status end,
        updated_at = case when (select yes from redelivery) then conversations.updated_at else ${now()} end
      returning id, customer_message_at,
                exists (select 1 from ${messages} m where m.conversation_id = conversations.id
                            and m.direction = 'inbound' and m.sender_type = 'customer'
                            and m.message_id is distinct from ${message.upstreamId}) as has_inbound
    ), message as (
      insert into ${messages} (account_id, conversation_id, message_id, direction, sender_type, type, text,
                               interactive, media, payload, context_message_id, status, upstream_timestamp,
                               created_at, updated_at)
      select ${accountId}, conversation.id, ${message.upstreamId}, 'inbound', 'customer', ${message.type},
             ${message.text}, ${json(message.interactive)}::jsonb, ${json(media)}::jsonb,
             ${json(message.payload)}::jsonb, ${message.contextMessageId}, 'received', ${message.timestamp},
             ${createdAt}, ${createdAt}
      from conversation
      on conflict (account_id, message_id) do nothing
      returning id
    )
    select (select account_id from owner) as account_id, (select messages_per_second from owner) as send_limit,
           (select id from contact) as contact_id,
           conversation.id as conversation_id, conversation.has_inbound,
           conversation.customer_message_at,
           coalesce((select id from message),
                    (select id from ${messages} where account_id = ${accountId}
                       and message_id = ${message.upstreamId})) as message_id,
           exists (select 1 from message) as inserted, ${commitUnflushed} as unflushed,
           ${runnerLookColumns(accountId, sql`(select id from contact)`)},
           (select json_build_object('optOutKeywords', s.opt_out_keywords, 'optInKeywords', s.opt_in_keywords,
                                     'optOutReply', s.opt_out_reply)
              from account_settings s where s.account_id = ${accountId}) as consent,
           exists (select 1 from ${messages} m where m.conversation_id = conversation.id
                      and m.campaign_id is not null) as campaign_thread
    from conversation`),
  );
  const row = rows[0];
  if (!row) return "unknown_number";
  if (!row.message_id) return null;
  return {
    accountId: row.account_id,
    contactId: row.contact_id,
    conversationId: row.conversation_id,
    messageId: row.message_id,
    firstInbound: !row.has_inbound,
    messageType: message.type,
    text: message.text,
    phoneNumberId: change.phoneNumberId,
    sendLimit: row.send_limit,
    customerMessageAt: row.customer_message_at === null ? null : new Date(row.customer_message_at),
    look: toRunnerLook(row),
    consent: row.consent ?? null,
    campaignThread: row.campaign_thread,
    inserted: row.inserted,
  };
}

/**
 * The statement that finds or creates the message's contact. A message with a
 * BSUID (from_user_id) matches the contact with that BSUID first, then the
 * one with its WhatsApp id (the number, or the BSUID when Meta withholds the
 * number); the BSUID and username are kept. Without one, the plain upsert.
 */
function contactUpsertSql(message: InboundMessage, change: WebhookChange, now: Date) {
  const name = change.profiles.get(message.from) ?? null;
  const user = change.users?.get(message.from);
  const userId = message.fromUserId ?? user?.userId ?? null;
  const phone = isBsuid(message.from) ? null : toUpstreamPhone(message.from);
  if (!userId) {
    return sql`
      insert into ${contacts} (account_id, wa_id, name, phone)
      select owner.account_id, ${message.from}, ${name}, ${phone}
        from owner
      on conflict (account_id, wa_id) do update
        set name = coalesce(excluded.name, contacts.name), updated_at = ${now}
      returning id`;
  }
  return sql`
      insert into ${contacts} (account_id, wa_id, name, phone, bsuid, username)
      select owner.account_id,
             coalesce((select k.wa_id from ${contacts} k where k.account_id = owner.account_id and k.bsuid = ${userId}),
                      ${message.from}),
             ${name}, ${phone}, ${userId}, ${user?.username ?? null}
        from owner
      on conflict (account_id, wa_id) do update
        set name = coalesce(excluded.name, contacts.name),
            phone = coalesce(contacts.phone, excluded.phone),
            bsuid = excluded.bsuid,
            username = coalesce(excluded.username, contacts.username),
            updated_at = ${now}
      returning id`;
}

/** Mirrors a customer's reaction; returns why it was skipped, if it was. */
async function storeReaction(
  tx: DbOrTx,
  accountId: string,
  reaction: InboundReaction,
  thread: (waId: string) => Promise<Thread>,
): Promise<string | null> {
  const [target] = await tx
    .select({ id: messages.id, conversationId: messages.conversationId })
    .from(messages)
    .where(and(eq(messages.accountId, accountId), eq(messages.messageId, reaction.targetMessageId)));
  if (!target) return "target message unknown";
  const { contactId, conversationId } = await thread(reaction.from);
  // A customer reacts within their own conversation only.
  if (conversationId !== target.conversationId) return "target message is in another conversation";

  const key = and(
    eq(messageReactions.messageId, target.id),
    eq(messageReactions.actorType, "customer"),
    eq(messageReactions.actorId, contactId),
  );
  if (reaction.emoji === null) {
    await tx.delete(messageReactions).where(key);
    return null;
  }
  await tx
    .insert(messageReactions)
    .values({
      accountId,
      messageId: target.id,
      conversationId,
      actorType: "customer",
      actorId: contactId,
      emoji: reaction.emoji,
    })
    .onConflictDoUpdate({
      target: [messageReactions.messageId, messageReactions.actorType, messageReactions.actorId],
      set: { emoji: reaction.emoji, updatedAt: sql`now()` },
    });
  return null;
}

/** Moves an outbound message forward (see STATUS_PREDECESSORS); stale or unknown updates change nothing. */
async function applyStatus(tx: DbOrTx, accountId: string, update: StatusUpdate, now: Date) {
  const { rows: applied } = await tx.execute(moveByStatus(sql`${accountId}::uuid`, update, now));
  if (applied.length > 0 || !isOurMessageId(update.callbackData)) return;
  // A send whose answer we never recorded (a timeout, a dropped connection, a crash):
  // Meta's status names it by our id. It was sent: recorded now with Meta's id, and its
  // settle job runs at once to move its run on (instead of sending it once more).
  const named = await tx
    .update(messages)
    .set({ messageId: update.upstreamId, ...statusColumns(update, now) })
    .where(
      and(
        eq(messages.id, update.callbackData),
        eq(messages.accountId, accountId),
        eq(messages.direction, "outbound"),
        isNull(messages.messageId),
        eq(messages.status, "pending"),
      ),
    )
    .returning({ id: messages.id });
  if (named.length === 0) return;
  await addJob(
    tx,
    SETTLE_SEND_TASK,
    { messageId: update.callbackData },
    { jobKey: `${SETTLE_SEND_TASK}:${update.callbackData}`, maxAttempts: 5 },
  );
}

/** Whether a status's callback data can name one of our messages (we send our message's id). */
const isOurMessageId = (callbackData: string | null): callbackData is string => isUuid(callbackData);

/**
 * Template status changes, routed by business account id to every account
 * whose channel has it (unknown business accounts: ignored). Returns how
 * many stored templates changed.
 */
export async function applyTemplateUpdates(db: DbOrTx, updates: TemplateStatusChange[], now: Date) {
  let changed = 0;
  for (const update of updates) {
    const owners = await db
      .select({ accountId: messagingConfigs.accountId })
      .from(messagingConfigs)
      .where(eq(messagingConfigs.businessAccountId, update.businessAccountId));
    for (const { accountId } of owners) {
      const applied = await applyTemplateStatus(db, {
        accountId,
        upstreamId: update.templateId,
        name: update.name,
        language: update.language,
        event: update.event,
        now,
      });
      if (applied) changed += 1;
    }
  }
  return changed;
}

const RETRYABLE = new Set(["40P01", "40001"]);

/** Two changes locking the same contacts in opposite orders deadlock; the loser tries again. */
async function withDeadlockRetry<T>(run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (error) {
      if (attempt >= 3 || !RETRYABLE.has(pgErrorCode(error) ?? "")) throw error;
    }
  }
}

export type { InboundMessageStored };
