import { eq } from "drizzle-orm";
import { messages, messagingConfigs } from "../db/schema/index.js";
import type { AppDeps } from "../deps.js";
import { ApiError } from "../http/errors.js";
import { GraphApiError, type OutboundMessage, toUpstreamPhone } from "../upstream/graph.js";
import { toMessageJson } from "./json.js";
import { nextMessageTime, touchConversation } from "./threads.js";

/**
 * An agent's text reply. The message is stored (pending) before the upstream
 * call, so that a send that fails or times out still shows in the
 * conversation, as `failed` with the upstream error.
 *
 * The flow runner sends its bot messages through here too: `sender: "bot"`
 * (no user) and, for buttons, lists and media, the `outbound` message to send
 * (stored as the message's payload, `text` being what the inbox shows).
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
    /** The row's id, when the caller needs it before the send (a media file is stored under it). */
    id?: string;
    /** Media metadata of the message (`media` on the API). */
    media?: Record<string, unknown>;
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

  const createdAt = nextMessageTime(deps.now());
  const pending = await db.transaction(async (tx) => {
    const [row] = await tx
      .insert(messages)
      .values({
        ...(input.id ? { id: input.id } : {}),
        accountId: input.accountId,
        conversationId: input.conversationId,
        direction: "outbound",
        senderType: input.sender ?? "agent",
        senderUserId: input.userId,
        type: input.outbound?.type ?? "text",
        text: input.text,
        payload: input.outbound && input.outbound.type !== "text" ? input.outbound : null,
        media: input.media ?? null,
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
  });

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
