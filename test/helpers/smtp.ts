import type { AddressInfo } from "node:net";
import { SMTPServer } from "smtp-server";

/** A mail as the SMTP server received it. */
export interface ReceivedMail {
  /** Envelope recipients (RCPT TO). */
  to: string[];
  from: string;
  subject: string;
  /** The decoded plain-text body. */
  text: string;
  /** The first http(s) link of the body. */
  link: string | undefined;
}

export interface TestSmtp {
  /** smtp://user:password@127.0.0.1:port */
  url: string;
  user: string;
  password: string;
  received: ReceivedMail[];
  /** Resolves with the first received mail (already or later) that matches, or fails after `timeoutMs`. */
  waitFor(match: (mail: ReceivedMail) => boolean, timeoutMs?: number): Promise<ReceivedMail>;
  /** Makes the server refuse every login (true) or accept the right one again (false). */
  refuseLogins(refuse: boolean): void;
  close(): Promise<void>;
}

/**
 * A real SMTP server on a loopback port (the smtp-server package): it wants a
 * login, accepts every mail and keeps what arrived for the test to read.
 */
export async function startTestSmtp(): Promise<TestSmtp> {
  const user = "mailer";
  const password = `pw-${Math.random().toString(36).slice(2)}-secret`;
  const received: ReceivedMail[] = [];
  const waiters = new Set<() => void>();
  let refuse = false;
  const server = new SMTPServer({
    disabledCommands: ["STARTTLS"],
    allowInsecureAuth: true,
    authMethods: ["PLAIN", "LOGIN"],
    logger: false,
    onAuth(auth, _session, callback) {
      if (!refuse && auth.username === user && auth.password === password) callback(null, { user });
      else callback(new Error("Invalid username or password"));
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => {
        const mail = parseMail(Buffer.concat(chunks).toString("utf8"));
        received.push({
          ...mail,
          to: session.envelope.rcptTo.map((r) => r.address),
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
        });
        for (const wake of waiters) wake();
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.server.address() as AddressInfo;

  return {
    url: `smtp://${user}:${password}@127.0.0.1:${port}`,
    user,
    password,
    received,
    refuseLogins(value) {
      refuse = value;
    },
    waitFor(match, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const look = () => {
          const found = received.find(match);
          if (!found) return false;
          clearTimeout(timer);
          waiters.delete(wake);
          resolve(found);
          return true;
        };
        const wake = () => void look();
        const timer = setTimeout(() => {
          waiters.delete(wake);
          reject(new Error(`no matching mail within ${timeoutMs} ms (${received.length} received)`));
        }, timeoutMs);
        if (!look()) waiters.add(wake);
      });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Headers (unfolded) and the text body of a single-part plain-text mail, as nodemailer writes one. */
function parseMail(raw: string): Pick<ReceivedMail, "subject" | "text" | "link"> {
  const split = raw.indexOf("\r\n\r\n");
  const head = raw.slice(0, split).replace(/\r\n[ \t]+/g, " ");
  const bodyRaw = raw.slice(split + 4);
  const header = (name: string) =>
    head
      .split("\r\n")
      .find((line) => line.toLowerCase().startsWith(`${name.toLowerCase()}:`))
      ?.slice(name.length + 1)
      .trim() ?? "";
  const encoding = header("Content-Transfer-Encoding").toLowerCase();
  const text =
    encoding === "quoted-printable"
      ? Buffer.from(
          bodyRaw
            .replace(/=\r\n/g, "")
            .replace(/=([0-9A-F]{2})/gi, (_m, hex: string) => String.fromCharCode(Number.parseInt(hex, 16))),
          "latin1",
        ).toString("utf8")
      : encoding === "base64"
        ? Buffer.from(bodyRaw, "base64").toString("utf8")
        : bodyRaw;
  return { subject: header("Subject"), text, link: /https?:\/\/[^\s]+/.exec(text)?.[0] };
}
