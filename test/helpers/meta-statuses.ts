import type { AcceptedMessage } from "../../src/upstream/sandbox/server.js";
import { signPayload, statusPayload } from "../../src/upstream/sandbox/webhook-payloads.js";

/**
 * Meta's status webhooks for the in-process sandbox (its `onMessageAccepted`):
 * `sent` 300 ms after a send is accepted, echoing its `biz_opaque_callback_data`,
 * posted to whichever service `target()` names and posted again until one
 * acknowledges it, as Meta retries (for two minutes here).
 */
export function metaStatuses(target: () => string | undefined, appSecret: string) {
  let acknowledged = 0;
  // What customers received: the sends Meta took (a request dropped before Meta took it is none).
  const accepted = new Map<string, number>();
  const history: Array<{ to: string; at: number; acknowledgedAt?: number }> = [];
  const post = (message: AcceptedMessage) => {
    accepted.set(message.to, (accepted.get(message.to) ?? 0) + 1);
    const entry: { to: string; at: number; acknowledgedAt?: number } = { to: message.to, at: Date.now() };
    history.push(entry);
    const { payload } = statusPayload({
      phoneNumberId: message.phoneNumberId,
      messageId: message.messageId,
      recipientId: message.to,
      status: "sent",
      callbackData: message.callbackData,
    });
    const raw = JSON.stringify(payload);
    const started = Date.now();
    const attempt = async (): Promise<void> => {
      const url = target();
      const ok =
        url !== undefined &&
        (await fetch(`${url}/api/messaging/webhook`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-hub-signature-256": signPayload(raw, appSecret) },
          body: raw,
          signal: AbortSignal.timeout(5_000),
        }).then(
          (r) => r.status === 200,
          () => false,
        ));
      if (ok) {
        acknowledged += 1;
        entry.acknowledgedAt = Date.now();
        return;
      }
      if (Date.now() - started < 120_000) {
        await new Promise((r) => setTimeout(r, 250));
        return attempt();
      }
    };
    setTimeout(() => void attempt(), 300);
  };
  return {
    onMessageAccepted: post,
    acknowledged: () => acknowledged,
    accepted: () => accepted,
    history: () => history,
  };
}
