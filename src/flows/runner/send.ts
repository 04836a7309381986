import { ApiError } from "../../http/errors.js";
import { sendAgentText } from "../../inbox/send.js";
import type { RunnerDeps } from "./engine.js";
import type { BuiltMessage } from "./outbound.js";

export type SendResult =
  | { ok: true; messageId: string; upstreamId: string | null }
  | { ok: false; messageId: string | null; error: { message: string } & Record<string, unknown> };

/**
 * A bot message goes out through the inbox's send path, like an agent's reply:
 * stored first (sender_type bot), then sent, then marked sent or failed with
 * the upstream error. Its HTTP-shaped errors become a result the runner
 * records on the run; they never carry the access token.
 */
export async function sendBotMessage(
  deps: RunnerDeps,
  input: {
    accountId: string;
    conversationId: string | null;
    contactPhone: string | null;
    message: BuiltMessage;
  },
): Promise<SendResult> {
  if (!input.conversationId) {
    return { ok: false, messageId: null, error: { message: "The run has no conversation to write to" } };
  }
  try {
    const sent = await sendAgentText(deps, {
      accountId: input.accountId,
      userId: null,
      sender: "bot",
      conversationId: input.conversationId,
      contactPhone: input.contactPhone,
      text: input.message.text,
      outbound: input.message.outbound,
    });
    return { ok: true, messageId: sent.id, upstreamId: sent.message_id };
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    const stored = error.extra?.message as { id?: unknown; error?: unknown } | undefined;
    const upstream = stored?.error && typeof stored.error === "object" ? stored.error : {};
    return {
      ok: false,
      messageId: typeof stored?.id === "string" ? stored.id : null,
      error: { ...(upstream as Record<string, unknown>), message: error.message },
    };
  }
}
