import { eq, type SQL, sql } from "drizzle-orm";
import { stepBackForAgent } from "../bots/automation.js";
import { adoptWhatsAppId, isBsuid } from "../contacts/identity.js";
import type { DbOrTx } from "../db/client.js";
import { prepared } from "../db/prepared.js";
import { tableRow } from "../db/rows.js";
import type { MessageStatus } from "../db/schema/inbox.js";
import { messages, messagingConfigs } from "../db/schema/index.js";
import type { AppDeps } from "../deps.js";
import { ApiError } from "../http/errors.js";
import { addJobSql } from "../queue/add.js";
import type { SendPayload } from "../queue/tasks.js";
import { GraphApiError, type OutboundMessage, toUpstreamPhone } from "../upstream/graph.js";
import { toMessageJson } from "./json.js";
import { nextMessageTime, touchConversationSql } from "./threads.js";

/** A job that sends the message, added with it (its payload gets `messageId`). */
export interface SendJob {
  task: "send-bot-message" | "send-message";
  payload: Omit<SendPayload, "messageId">;
  queueName: string;
  maxAttempts: number;
}

/**
 * Stores an outbound message `pending` (no upstream id yet) and moves its
 * conversation's activity, in one statement (the conversation after the
 * message, so that the conversation's event shows it as the last one); with
 * `sendJob`, the job that sends it too, so that the message exists exactly
 * when its job does.
 */
export async function insertPendingMessage(
  tx: DbOrTx,
  input: PendingMessageInput,
): Promise<typeof messages.$inferSelect & { channel?: ClaimChannel }> {
  const parts = pendingMessageParts(input);
  const { rows } = await tx.execute<Record<string, unknown>>(
    prepared(sql`with ${parts.ctes} select ${parts.columns} from ${parts.from}`),
  );
  const row = rows[0];
  if (!row) throw new Error("The message was not stored");
  return parts.read(row);
}

/** What insertPendingMessage stores. */
export interface PendingMessageInput {
  accountId: string;
  conversationId: string;
  userId: string | null;
  sender: "agent" | "bot";
  text: string;
  outbound?: OutboundMessage;
  now: Date;
  /** The row's id, when the caller needs it first (a media file is stored under it). */
  id?: string;
  /** Media metadata of the message (`media` on the API). */
  media?: Record<string, unknown>;
  sendJob?: SendJob;
  /**
   * Instead of a send job: the message is stored claimed for a send by this
   * instance (`send_started_at`) with its settle job (see sending/outbound.ts),
   * and the statement also answers the account's channel (`channel`).
   */
  claim?: ClaimedSendJob;
}

/**
 * insertPendingMessage's statement in parts, for a caller that writes it
 * together with its own (the runner's run write, see RunWrites.alongside):
 * `with ${ctes} select ${columns} from ${from}` is the statement, and `read`
 * turns its row into the stored message. Its CTEs are named `message` and
 * `conversation`.
 */
export function pendingMessageParts(input: PendingMessageInput) {
  const at = nextMessageTime(input.now);
  const createdAt = at.toISOString();
  const { outbound, sendJob, claim } = input;
  const json = (value: unknown) => (value === null || value === undefined ? null : JSON.stringify(value));
  const ctes = sql`message as (
      insert into ${messages} (id, account_id, conversation_id, direction, sender_type, sender_user_id, type,
                               text, payload, media, status, created_at, updated_at${claim ? sql`, send_started_at` : sql``})
      values (coalesce(${input.id ?? null}::uuid, gen_random_uuid()), ${input.accountId}::uuid,
              ${input.conversationId}::uuid, 'outbound', ${input.sender}::text, ${input.userId}::uuid,
              ${outbound?.type ?? "text"}::text, ${input.text}::text,
              ${json(outbound && outbound.type !== "text" ? outbound : null)}::jsonb,
              ${json(input.media)}::jsonb, 'pending', ${createdAt}::timestamptz, ${createdAt}::timestamptz${
                claim ? sql`, ${input.now.toISOString()}::timestamptz` : sql``
              })
      returning *
    ), conversation as (${touchConversationSql(input.conversationId, at, sql`exists (select 1 from message)`)})`;
  const columns = sql`message.*${
    sendJob
      ? sql`, ${addJobSql(
          sendJob.task,
          sql`(jsonb_build_object('messageId', message.id) || ${json(sendJob.payload)}::jsonb)::json`,
          { queueName: sendJob.queueName, maxAttempts: sendJob.maxAttempts },
        )} is not null as queued`
      : sql``
  }${
    claim
      ? sql`, ${addJobSql(
          claim.task,
          sql`(jsonb_build_object('messageId', message.id) || ${json(claim.payload)}::jsonb)::json`,
          {
            runAt: claim.runAt,
            jobKey: sql`${claim.jobKeyPrefix}::text || message.id::text`,
            maxAttempts: claim.maxAttempts,
          },
        )} is not null as settled,
          mc.phone_number_id as channel_phone_number_id, mc.access_token as channel_access_token,
          mc.messages_per_second as channel_limit`
      : sql``
  }`;
  const from = sql`message${
    claim ? sql` left join ${messagingConfigs} mc on mc.account_id = ${input.accountId}::uuid` : sql``
  }`;
  const read = (row: Record<string, unknown>): typeof messages.$inferSelect & { channel?: ClaimChannel } => {
    const stored = tableRow(messages, row);
    if (!claim) return stored;
    return {
      ...stored,
      channel: {
        phoneNumberId: (row.channel_phone_number_id as string | null) ?? null,
        accessToken: (row.channel_access_token as string | null) ?? null,
        limit: (row.channel_limit as number | null) ?? null,
      },
    };
  };
  return { ctes, columns, from, read };
}

/** The settle job of a message stored claimed (insertPendingMessage's `claim`). */
export interface ClaimedSendJob {
  task: "settle-send";
  payload: Record<string, unknown>;
  runAt: Date;
  /** The job key is this followed by the message's id. */
  jobKeyPrefix: string;
  maxAttempts: number;
}

/** The account's channel, as a claimed insert reads it. */
export interface ClaimChannel {
  phoneNumberId: string | null;
  accessToken: string | null;
  limit: number | null;
}

/**
 * An agent's text reply. The message is stored (pending) before the upstream
 * call, so that a send that fails or times out still shows in the
 * conversation, as `failed` with the upstream error.
 *
 * `outbound` is the message to send when it is not plain text (stored as the
 * message's payload, `text` being what the inbox shows).
 */
export async function sendAgentText(
  deps: Pick<AppDeps, "db" | "cipher" | "sends" | "now">,
  input: {
    accountId: string;
    userId: string | null;
    conversationId: string;
    contactPhone: string | null;
    text: string;
    sender?: "agent" | "bot";
    outbound?: OutboundMessage;
    id?: string;
    media?: Record<string, unknown>;
  },
) {
  const { db } = deps;
  const [config] = await db
    .select({
      phoneNumberId: messagingConfigs.phoneNumberId,
      accessToken: messagingConfigs.accessToken,
      messagesPerSecond: messagingConfigs.messagesPerSecond,
    })
    .from(messagingConfigs)
    .where(eq(messagingConfigs.accountId, input.accountId));
  if (!config) throw new ApiError(400, "The messaging channel is not configured for this account");
  // A customer known only by their BSUID (no phone) is addressed by it.
  const to = isBsuid(input.contactPhone) ? input.contactPhone : toUpstreamPhone(input.contactPhone);
  if (!to) throw new ApiError(400, "The contact has no phone number");
  let token: string;
  try {
    token = deps.cipher.decrypt(config.accessToken);
  } catch {
    throw new ApiError(500, "The stored access token cannot be decrypted: reconnect the messaging channel");
  }

  // The number's slot is reserved while the message is stored (see SendPipeline.expect).
  deps.sends.expect(config.phoneNumberId, config.messagesPerSecond);
  const pending = await insertPendingMessage(db, {
    accountId: input.accountId,
    conversationId: input.conversationId,
    userId: input.userId,
    sender: input.sender ?? "agent",
    text: input.text,
    outbound: input.outbound,
    now: deps.now(),
    id: input.id,
    media: input.media,
  });
  // An agent's message: the bot steps back (product.md section 20).
  if ((input.sender ?? "agent") === "agent") {
    await stepBackForAgent(db, {
      accountId: input.accountId,
      conversationId: input.conversationId,
      now: deps.now(),
    });
  }

  const store = async (
    update: { [K in keyof typeof messages.$inferInsert]?: (typeof messages.$inferInsert)[K] | SQL },
  ) => {
    const [row] = await db
      .update(messages)
      .set({ ...update, updatedAt: deps.now() })
      .where(eq(messages.id, pending.id))
      .returning();
    return toMessageJson(row ?? pending);
  };
  // Through the number's send pipeline: paced at its messages_per_second, ahead of campaign sends.
  const sent = await deps.sends.send({
    messageId: pending.id,
    phoneNumberId: config.phoneNumberId,
    token,
    to,
    message: input.outbound ?? { type: "text", text: { body: input.text } },
    limit: config.messagesPerSecond,
    priority: "customer",
  });
  // An agent's send carries no campaign: never withdrawn, handled as released if it were.
  if (sent.kind === "released" || sent.kind === "withdrawn") {
    const message = await store({
      status: "failed",
      error: { message: "Not sent: the service was shutting down" },
    });
    throw new ApiError(503, "The service is shutting down: the message was not sent", { message });
  }
  if (sent.kind === "error") {
    const { error } = sent;
    if (!(error instanceof GraphApiError)) {
      await store({ status: "failed", error: { message: "The message could not be sent" } });
      throw error;
    }
    const message = await store({ status: "failed", error: error.toJSON() });
    throw new ApiError(502, error.message, { message });
  }
  await adoptWhatsAppId(db, { conversationId: input.conversationId, waId: sent.sent.waId });
  // A status webhook naming it (by its callback data) may have moved it on already.
  return store({
    messageId: sent.sent.messageId,
    status: sql<MessageStatus>`case when ${messages.status} = 'pending' then 'sent' else ${messages.status} end`,
  });
}
