import { openMail } from "../../mail/queue.js";
import type { Task } from "../types.js";

/**
 * One queued mail, handed to the SMTP server (or the development outbox). A
 * failure throws and the job is tried again later; a crash between the
 * server's acceptance and the job's completion sends the mail once more (at
 * least once, never lost).
 */
export const sendMail: Task<"send-mail"> = async (payload, deps, job) => {
  const mail = openMail(deps.cipher, payload);
  await deps.mailer.send(mail);
  deps.log.info({ mail: { kind: mail.kind, job: job.id, attempt: job.attempt } }, "mail handed over");
};
