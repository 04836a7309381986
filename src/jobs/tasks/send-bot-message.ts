import { abandonUnsentSend, settleSend, startSend } from "../../sending/outbound.js";
import type { Task } from "../types.js";

export { classifySendError, MAX_SEND_ATTEMPTS, retryDelayMs } from "../../sending/outbound.js";

/**
 * Sends one queued outbound message (a bot's, or a campaign's with
 * `priority: "campaign"`): claims it and hands its HTTP call to the send
 * pipeline. The job ends before Meta answers; the answer is recorded when it
 * comes, and the message's settle job resolves whatever interrupts that.
 */
export const sendBotMessage: Task<"send-bot-message" | "send-message"> = async (payload, deps, job) => {
  // Tracked: a shutdown waits for a send being claimed, so that it is handed back, not left claimed.
  const work = startSend(deps, payload);
  deps.sends.track(work);
  try {
    await work;
  } catch (error) {
    // The last attempt: a message never claimed would stay `pending` (its recipient `sending`) for ever.
    if (job.attempt >= job.maxAttempts) {
      await abandonUnsentSend(deps, payload, error).catch((failure: unknown) =>
        // The campaign's claim job fails it later (failOrphanedSends).
        deps.log.error({ err: failure, messageId: payload.messageId }, "failing an abandoned send failed"),
      );
    }
    throw error;
  }
};

/** Resolves a send that was interrupted, handed back or named by a status webhook (see sending/outbound.ts). */
export const settleSendTask: Task<"settle-send"> = async (payload, deps) => {
  const work = settleSend(deps, payload);
  deps.sends.track(work);
  await work;
};
