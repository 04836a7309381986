import { eq } from "drizzle-orm";
import type { DbOrTx } from "../db/client.js";
import { messages, messagingConfigs } from "../db/schema/index.js";
import type { AppDeps } from "../deps.js";
import { ApiError } from "../http/errors.js";
import { GraphApiError, type OutboundMessage, toUpstreamPhone } from "../upstream/graph.js";
import { toMessageJson } from "./json.js";
import { nextMessageTime, touchConversation } from "./threads.js";

/**
 * Stores an outbound message `pending` (no upstream id yet) and moves its
 * conversation's activity. Call it in a transaction.
 */
export async function insertPendingMessage(
  tx: DbOrTx,
  input: {
    accountId: string;
    conversationId: string;
    userId: string | null;
    sender: "agent" | "bot";
    text: string;
    outbound?: OutboundMessage;
    now: Date;
  },
) {
  const createdAt = nextMessageTime(input.now);
  const [row] = await tx
    .insert(messages)
    .values({
      accountId: input.accountId,
      conversationId: input.conversationId,
      direction: "outbound",
      senderType: input.sender,
      senderUserId: input.userId,
      type: input.outbound?.type ?? "text",
      text: input.text,
      payload: input.outbound && input.outbound.type !== "text" ? input.outbound : null,
      status: "pending",
      createdAt,
      updatedAt: createdAt,
    })
    .returning();
  await touchConversation(tx, {
    conversationId: input.conversationId,
    at: createdAt,
    reopen: false,
    now: createdAt,
  });
  return row!;
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
  deps: Pick<AppDeps, "db" | "cipher" | "graph" | "now">,
  input: {
    accountId: string;
    userId: string | null;
    conversationId: string;
    contactPhone: string | null;
    text: string;
    sender?: "agent" | "bot";
    outbound?: OutboundMessage;
  },
) {
  const { db } = deps;
  const [config] = await db
    .select({ phoneNumberId: messagingConfigs.phoneNumberId, accessToken: messagingConfigs.accessToken })
    .from(messagingConfigs)
    .where(eq(messagingConfigs.accountId, input.accountId));
  if (!config) throw new ApiError(400, "The messaging channel is not configured for this account");
  const to = toUpstreamPhone(input.contactPhone);
  if (!to) throw new ApiError(400, "The contact has no phone number");
  let token: string;
  try {
    token = deps.cipher.decrypt(config.accessToken);
  } catch {
    throw new ApiError(500, "The stored access token cannot be decrypted: reconnect the messaging channel");
  }

  const pending = await db.transaction((tx) =>
    insertPendingMessage(tx, {
      accountId: input.accountId,
      conversationId: input.conversationId,
      userId: input.userId,
      sender: input.sender ?? "agent",
      text: input.text,
      outbound: input.outbound,
      now: deps.now(),
    }),
  );

  const store = async (update: Partial<typeof messages.$inferInsert>) => {
    const [row] = await db
      .update(messages)
      .set({ ...update, updatedAt: deps.now() })
      .where(eq(messages.id, pending.id))
      .returning();
    return toMessageJson(row ?? pending);
  };
  let sent: Awaited<ReturnType<typeof deps.graph.sendMessage>>;
  try {
    sent = await deps.graph.sendMessage(
      token,
      config.phoneNumberId,
      to,
      input.outbound ?? { type: "text", text: { body: input.text } },
    );
  } catch (error) {
    if (!(error instanceof GraphApiError)) {
      await store({ status: "failed", error: { message: "The message could not be sent" } });
      throw error;
    }
    const message = await store({ status: "failed", error: error.toJSON() });
    throw new ApiError(502, error.message, { message });
  }
  return store({ messageId: sent.messageId, status: "sent" });
}
