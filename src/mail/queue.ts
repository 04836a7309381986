import type { DbOrTx } from "../db/client.js";
import type { TokenCipher } from "../ports.js";
import { addJob } from "../queue/add.js";
import type { Mail, MailKind } from "./mailer.js";

export const SEND_MAIL_TASK = "send-mail";

/** Tries over about a day (graphile-worker's exponential back-off), then the job stays failed in the queue. */
const MAX_ATTEMPTS = 12;

const KINDS = new Set<MailKind>(["invitation", "password-reset", "email-verification"]);

/**
 * Queues a mail: a job row on our PostgreSQL, committed with the caller's
 * transaction when `db` is one, so a crash never loses a mail that was
 * promised. The mail is sealed with the encryption key in the job's payload:
 * its link is a credential and must not sit in the clear in the database.
 */
export async function queueMail(db: DbOrTx, cipher: TokenCipher, mail: Mail): Promise<void> {
  await addJob(
    db,
    SEND_MAIL_TASK,
    { sealed: cipher.encrypt(JSON.stringify(mail)) },
    { maxAttempts: MAX_ATTEMPTS },
  );
}

/** The mail a send-mail job carries. */
export function openMail(cipher: TokenCipher, payload: Record<string, unknown>): Mail {
  if (typeof payload.sealed !== "string") throw new Error("send-mail job without a sealed mail");
  const mail = JSON.parse(cipher.decrypt(payload.sealed)) as Mail;
  if (!KINDS.has(mail.kind) || typeof mail.to !== "string" || typeof mail.link !== "string") {
    throw new Error("send-mail job with a malformed mail");
  }
  return mail;
}
