import type { FastifyBaseLogger } from "fastify";
import nodemailer from "nodemailer";
import type { Config } from "../config.js";

/** What the product emails. */
export type MailKind = "invitation" | "password-reset" | "email-verification";

/** One outgoing mail: plain text, with the one link it exists for. */
export interface Mail {
  kind: MailKind;
  to: string;
  subject: string;
  text: string;
  /** The link the mail carries (a credential: whoever holds it acts for the mailbox). */
  link: string;
}

export interface Mailer {
  /** smtp: sent through SMTP_URL; outbox: written to the log (development); off: not sent (production without SMTP). */
  readonly mode: "smtp" | "outbox" | "off";
  /** Hands the mail over (to the SMTP server, or the outbox); throws MailError when the server refuses or cannot be reached. */
  send(mail: Mail): Promise<void>;
  close(): void;
}

/** A failed SMTP delivery, its text free of the SMTP credentials (it is logged and stored with the job). */
export class MailError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "MailError";
  }
}

const CONNECT_TIMEOUT_MS = 10_000;
const SOCKET_TIMEOUT_MS = 30_000;

/**
 * The mail sender of this process, chosen by configuration: SMTP when SMTP_URL
 * is set; otherwise the development outbox (each mail one JSON log line, link
 * included: whoever reads this process's log could act on those links, which
 * is why production never writes them) or, in production, nothing but a
 * warning that names the kind of mail that was not sent.
 */
export function createMailer(config: Pick<Config, "mail" | "env">, log: FastifyBaseLogger): Mailer {
  const { smtpUrl, from } = config.mail;
  if (!smtpUrl) {
    if (config.env === "production") {
      return {
        mode: "off",
        async send(mail) {
          log.warn({ mail: { kind: mail.kind } }, "mail not sent: SMTP_URL is not set");
        },
        close() {},
      };
    }
    return {
      mode: "outbox",
      async send(mail) {
        log.info(
          {
            outbox: { kind: mail.kind, to: mail.to, subject: mail.subject, link: mail.link, text: mail.text },
          },
          "mail outbox (SMTP_URL is not set)",
        );
      },
      close() {},
    };
  }

  const transport = nodemailer.createTransport({
    url: smtpUrl,
    connectionTimeout: CONNECT_TIMEOUT_MS,
    greetingTimeout: CONNECT_TIMEOUT_MS,
    socketTimeout: SOCKET_TIMEOUT_MS,
    logger: false,
    debug: false,
  });
  const secrets = smtpSecrets(smtpUrl);
  return {
    mode: "smtp",
    async send(mail) {
      try {
        await transport.sendMail({ from, to: mail.to, subject: mail.subject, text: mail.text });
      } catch (error) {
        throw new MailError(scrub(describeSmtpError(error), secrets));
      }
    },
    close() {
      transport.close();
    },
  };
}

/** The SMTP error's code, the server's reply code and text: never its command (an AUTH line) or the original object. */
function describeSmtpError(error: unknown): string {
  const e = (error ?? {}) as {
    code?: unknown;
    responseCode?: unknown;
    response?: unknown;
    message?: unknown;
  };
  const parts = [typeof e.code === "string" ? e.code : "ERROR"];
  if (typeof e.responseCode === "number") parts.push(String(e.responseCode));
  const detail = typeof e.response === "string" ? e.response : typeof e.message === "string" ? e.message : "";
  return `SMTP delivery failed (${parts.join(" ")})${detail ? `: ${detail.slice(0, 300)}` : ""}`;
}

/** The password of SMTP_URL, as written in the URL and decoded. */
function smtpSecrets(smtpUrl: string): string[] {
  const raw = new URL(smtpUrl).password;
  const values = [raw];
  try {
    values.push(decodeURIComponent(raw));
  } catch {
    // Kept as written.
  }
  return [...new Set(values.filter(Boolean))].sort((a, b) => b.length - a.length);
}

function scrub(text: string, secrets: string[]): string {
  let out = text;
  for (const secret of secrets) out = out.split(secret).join("[redacted]");
  return out;
}
