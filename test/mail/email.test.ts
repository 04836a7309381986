import { randomBytes } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";
import { createTestApp, signUp, signUpWithAccount, type TestApp, type TestUser } from "../helpers/harness.js";
import { type ReceivedMail, startTestSmtp, type TestSmtp } from "../helpers/smtp.js";

let smtp: TestSmtp;
let t: TestApp;
const PUBLIC_URL = "http://127.0.0.1:3000";

beforeAll(async () => {
  smtp = await startTestSmtp();
  t = await createTestApp({
    captureLogs: true,
    config: { mail: { smtpUrl: smtp.url, from: "wa-inbox <no-reply@example.com>" } },
  });
});
afterAll(async () => {
  await t?.close();
  await smtp?.close();
});

const uniqueEmail = (name: string) => `${name}-${randomBytes(4).toString("hex")}@example.com`;
const PASSWORD = "correct horse battery";

async function register(app: FastifyInstance, email: string, password = PASSWORD): Promise<TestUser> {
  const up = await app.inject({
    method: "POST",
    url: "/api/auth/sign-up/email",
    payload: { email, password, name: email.split("@")[0] },
  });
  expect(up.statusCode).toBe(200);
  return signIn(app, email, password);
}

async function signIn(app: FastifyInstance, email: string, password: string): Promise<TestUser> {
  const response = await app.inject({
    method: "POST",
    url: "/api/auth/sign-in/email",
    payload: { email, password },
  });
  expect(response.statusCode, response.body).toBe(200);
  const token = String(response.headers["set-auth-token"]);
  return { id: response.json().user.id, email, token, headers: { authorization: `Bearer ${token}` } };
}

const invite = (owner: TestUser, email: string) =>
  t.app.inject({
    method: "POST",
    url: "/api/accounts/invitations",
    headers: owner.headers,
    payload: { email },
  });
const accept = (token: string, user: TestUser) =>
  t.app.inject({
    method: "POST",
    url: `/api/invitations/${encodeURIComponent(token)}/accept`,
    headers: user.headers,
  });
const requestReset = (app: FastifyInstance, email: string) =>
  app.inject({ method: "POST", url: "/api/auth/request-password-reset", payload: { email } });
const mailTo = (email: string, kind: RegExp) => (m: ReceivedMail) =>
  m.to.includes(email) && kind.test(m.subject);
const emailVerified = async (user: TestUser) =>
  (await t.app.inject({ method: "GET", url: "/api/auth/get-session", headers: user.headers })).json().user
    .emailVerified as boolean;

/** The token a link carries: the last path segment of /invite/<token>, or its `token` query parameter. */
function linkToken(link: string | undefined): string {
  expect(link).toBeDefined();
  const url = new URL(String(link));
  return url.searchParams.get("token") ?? decodeURIComponent(url.pathname.split("/").pop() ?? "");
}

describe("invitations by email", () => {
  it("mails the invitee a link of its own, which proves the mailbox and lets an unverified user join", async () => {
    const { user: owner, accountId } = await signUpWithAccount(t.app, "Olivia");
    const email = uniqueEmail("invitee");
    const created = await invite(owner, email);
    expect(created.statusCode).toBe(201);
    const ownersToken = created.json().invitation.token as string;

    const mail = await smtp.waitFor(mailTo(email, /invited you/));
    expect(mail.to).toEqual([email]);
    expect(mail.from).toBe("no-reply@example.com");
    expect(mail.subject).toBe("Olivia invited you to Olivia's business on wa-inbox");
    expect(mail.link).toMatch(new RegExp(`^${PUBLIC_URL}/invite/`));
    const mailedToken = linkToken(mail.link);
    expect(mailedToken).not.toBe(ownersToken);

    // The link opens the console's invitation page.
    const page = await t.app.inject({
      method: "GET",
      url: new URL(String(mail.link)).pathname,
      headers: { accept: "text/html" },
    });
    expect(page.statusCode).toBe(200);

    const invitee = await register(t.app, email);
    expect(await emailVerified(invitee)).toBe(false);
    const joined = await accept(mailedToken, invitee);
    expect(joined.statusCode, joined.body).toBe(200);
    expect(joined.json().account.id).toBe(accountId);
    expect(await emailVerified(invitee)).toBe(true);
    // Single use: neither token works again.
    expect((await accept(ownersToken, await register(t.app, uniqueEmail("late")))).statusCode).toBe(404);
  });

  it("refuses the owner's token to a squatter who registered the invited address; the mailbox's owner takes it back with a reset", async () => {
    const { user: owner, accountId } = await signUpWithAccount(t.app, "Owner");
    const email = uniqueEmail("victim");
    const squatter = await register(t.app, email, "squatter's password");
    const created = await invite(owner, email);
    const ownersToken = created.json().invitation.token as string;
    const invitationMail = await smtp.waitFor(mailTo(email, /invited you/));

    // Even with the owner's token (a link passed on by hand, leaked), an unverified user cannot join.
    const refused = await accept(ownersToken, squatter);
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toMatchObject({ code: "email_not_verified" });
    expect(
      (await t.app.inject({ method: "GET", url: "/api/me", headers: squatter.headers })).json().account,
    ).toBe(null);

    // The mailbox's owner resets the password: the squatter's sessions end.
    expect((await requestReset(t.app, email)).statusCode).toBe(200);
    const resetMail = await smtp.waitFor(mailTo(email, /Reset your/));
    expect(resetMail.link).toMatch(new RegExp(`^${PUBLIC_URL}/reset-password\\?token=`));
    const reset = await t.app.inject({
      method: "POST",
      url: "/api/auth/reset-password",
      payload: { token: linkToken(resetMail.link), newPassword: "the real owner's password" },
    });
    expect(reset.statusCode, reset.body).toBe(200);
    expect(
      (await t.app.inject({ method: "GET", url: "/api/me", headers: squatter.headers })).statusCode,
    ).toBe(401);

    const rightful = await signIn(t.app, email, "the real owner's password");
    const joined = await accept(linkToken(invitationMail.link), rightful);
    expect(joined.statusCode, joined.body).toBe(200);
    expect(joined.json().account.id).toBe(accountId);
  });

  it("accepts the owner's token from a user whose email is verified (through the verification mail)", async () => {
    const { user: owner, accountId } = await signUpWithAccount(t.app, "Vera");
    const email = uniqueEmail("verified");
    const invitee = await register(t.app, email);
    // Sign-up with SMTP configured sends a verification mail.
    const verification = await smtp.waitFor(mailTo(email, /Confirm your email/));
    expect(verification.link).toMatch(new RegExp(`^${PUBLIC_URL}/api/auth/verify-email\\?token=`));

    const ownersToken = (await invite(owner, email)).json().invitation.token as string;
    expect((await accept(ownersToken, invitee)).statusCode).toBe(403);

    const link = new URL(String(verification.link));
    const followed = await t.app.inject({ method: "GET", url: `${link.pathname}${link.search}` });
    expect(followed.statusCode).toBe(302);
    expect(followed.headers.location).toBe("/");
    expect(await emailVerified(invitee)).toBe(true);

    const joined = await accept(ownersToken, invitee);
    expect(joined.statusCode, joined.body).toBe(200);
    expect(joined.json().account.id).toBe(accountId);
  });

  it("still answers 403 to another user, whatever token they hold", async () => {
    const { user: owner } = await signUpWithAccount(t.app, "Otto");
    const email = uniqueEmail("meant");
    await invite(owner, email);
    const mail = await smtp.waitFor(mailTo(email, /invited you/));
    const stranger = await signUp(t.app, "Stranger");
    const refused = await accept(linkToken(mail.link), stranger);
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error).toBe("This invitation was sent to another email address");
  });
});

describe("email verification", () => {
  it("sends the link again on request, answering an unknown email alike, and the link verifies", async () => {
    const email = uniqueEmail("resend");
    const user = await register(t.app, email);
    await smtp.waitFor(mailTo(email, /Confirm your email/));
    const resend = (address: string) =>
      t.app.inject({ method: "POST", url: "/api/auth/send-verification-email", payload: { email: address } });
    const known = await resend(email);
    const unknown = await resend(uniqueEmail("nobody"));
    expect(known.statusCode).toBe(200);
    expect(unknown.statusCode).toBe(200);
    expect(unknown.body).toBe(known.body);
    await t.app.deps.jobs.drain();
    const mails = smtp.received.filter(mailTo(email, /Confirm your email/));
    expect(mails).toHaveLength(2);
    const link = new URL(String(mails[1]?.link));
    expect((await t.app.inject({ method: "GET", url: `${link.pathname}${link.search}` })).statusCode).toBe(
      302,
    );
    expect(await emailVerified(user)).toBe(true);
    // A verified user signed in is told so; nothing is sent.
    const again = await t.app.inject({
      method: "POST",
      url: "/api/auth/send-verification-email",
      headers: user.headers,
      payload: { email },
    });
    expect(again.statusCode).toBe(400);
  });

  it("refuses a forged or altered link", async () => {
    const bad = await t.app.inject({
      method: "GET",
      url: "/api/auth/verify-email?token=not.a.jwt&callbackURL=%2F",
    });
    expect(bad.statusCode).toBe(302);
    expect(bad.headers.location).toBe("/?error=INVALID_TOKEN");
  });
});

describe("password reset", () => {
  it("sets a new password from the mailed link, ends every session, and works once", async () => {
    const email = uniqueEmail("forgetful");
    const first = await register(t.app, email);
    const second = await signIn(t.app, email, PASSWORD);

    const asked = await requestReset(t.app, email);
    expect(asked.statusCode).toBe(200);
    const mail = await smtp.waitFor(mailTo(email, /Reset your/));
    expect(mail.to).toEqual([email]);
    const token = linkToken(mail.link);

    // The link opens the console's page for the new password.
    const page = await t.app.inject({
      method: "GET",
      url: `/reset-password?token=${token}`,
      headers: { accept: "text/html" },
    });
    expect(page.statusCode).toBe(200);

    const tooShort = await t.app.inject({
      method: "POST",
      url: "/api/auth/reset-password",
      payload: { token, newPassword: "short" },
    });
    expect(tooShort.statusCode).toBe(400);

    const reset = await t.app.inject({
      method: "POST",
      url: "/api/auth/reset-password",
      payload: { token, newPassword: "a brand new password" },
    });
    expect(reset.statusCode, reset.body).toBe(200);
    for (const user of [first, second]) {
      expect((await t.app.inject({ method: "GET", url: "/api/me", headers: user.headers })).statusCode).toBe(
        401,
      );
    }
    const oldPassword = await t.app.inject({
      method: "POST",
      url: "/api/auth/sign-in/email",
      payload: { email, password: PASSWORD },
    });
    expect(oldPassword.statusCode).toBe(401);
    const fresh = await signIn(t.app, email, "a brand new password");
    expect(await emailVerified(fresh)).toBe(true);

    const again = await t.app.inject({
      method: "POST",
      url: "/api/auth/reset-password",
      payload: { token, newPassword: "yet another password" },
    });
    expect(again.statusCode).toBe(400);
  });

  it("answers a request for an unknown email exactly like one for a known email, and mails nobody", async () => {
    const known = uniqueEmail("known");
    await register(t.app, known);
    const unknown = uniqueEmail("nobody");
    const forKnown = await requestReset(t.app, known);
    const forUnknown = await requestReset(t.app, unknown);
    expect(forUnknown.statusCode).toBe(forKnown.statusCode);
    expect(forUnknown.body).toBe(forKnown.body);
    expect(forKnown.json()).toEqual({
      status: true,
      message: "If this email exists in our system, check your email for the reset link",
    });
    await smtp.waitFor(mailTo(known, /Reset your/));
    await t.app.deps.jobs.drain();
    expect(smtp.received.filter((m) => m.to.includes(unknown))).toEqual([]);
  });

  it("is throttled per email like sign-in, known and unknown emails alike", async () => {
    const app = await createTestApp({
      databaseUrl: t.config.databaseUrl,
      config: {
        encryptionKey: t.config.encryptionKey,
        mail: { smtpUrl: smtp.url, from: "no-reply@example.com" },
        signInRateLimit: { points: 2, durationSeconds: 900 },
      },
      workers: false,
    });
    try {
      const known = uniqueEmail("throttled");
      await register(app.app, known);
      for (const email of [known, uniqueEmail("throttled-unknown")]) {
        const statuses: number[] = [];
        for (let i = 0; i < 3; i++) statuses.push((await requestReset(app.app, email)).statusCode);
        expect(statuses).toEqual([200, 200, 429]);
      }
    } finally {
      await app.close(); // the database stays: it is the main app's
    }
  });
});

describe("the mail queue", () => {
  it("sends the mail from a job after the request returned, sealed in the queue until then", async () => {
    // An instance without workers answers the request; the mail waits in the queue.
    const smtpConfig = { mail: { smtpUrl: smtp.url, from: "no-reply@example.com" } };
    const api = await createTestApp({ config: smtpConfig, workers: false });
    try {
      const email = uniqueEmail("queued");
      const owner = (await signUpWithAccount(api.app, "Quinn")).user;
      const created = await api.app.inject({
        method: "POST",
        url: "/api/accounts/invitations",
        headers: owner.headers,
        payload: { email },
      });
      expect(created.statusCode).toBe(201);
      const { rows } = await api.database.pool.query<{ payload: unknown }>(
        "select payload from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id where t.identifier = 'send-mail'",
      );
      expect(rows.length).toBeGreaterThan(0);
      expect(JSON.stringify(rows)).not.toContain(email);
      expect(JSON.stringify(rows)).not.toContain("/invite/");
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(smtp.received.filter((m) => m.to.includes(email))).toEqual([]);

      // Another instance, with workers, picks the job up.
      const worker = await createTestApp({
        databaseUrl: api.config.databaseUrl,
        config: { ...smtpConfig, encryptionKey: api.config.encryptionKey },
      });
      try {
        const mail = await smtp.waitFor(mailTo(email, /invited you/));
        expect(mail.link).toMatch(/\/invite\//);
      } finally {
        await worker.close();
      }
    } finally {
      await api.close();
    }
  });

  it("retries a mail the server refused, and never writes the SMTP password in a log or the job's error", async () => {
    smtp.refuseLogins(true);
    const email = uniqueEmail("refused");
    try {
      await register(t.app, email);
      expect((await requestReset(t.app, email)).statusCode).toBe(200);
      let lastError: string | null = null;
      for (let i = 0; i < 100 && !lastError; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        const { rows } = await t.database.pool.query<{ last_error: string | null }>(
          "select last_error from graphile_worker.jobs where task_identifier = 'send-mail' and last_error is not null",
        );
        lastError = rows[0]?.last_error ?? null;
      }
      expect(lastError).toMatch(/EAUTH/);
      expect(lastError).not.toContain(smtp.password);
      expect(t.logs()).not.toContain(smtp.password);
      expect(smtp.received.filter((m) => m.to.includes(email))).toEqual([]);
    } finally {
      smtp.refuseLogins(false);
    }
    // The next attempt (graphile-worker's back-off; brought forward here) delivers it.
    await t.database.pool.query(
      "update graphile_worker._private_jobs set run_at = now() where last_error is not null",
    );
    await smtp.waitFor(mailTo(email, /Reset your/));
  });
});

describe("configuration", () => {
  const base = { NODE_ENV: "test", ENCRYPTION_KEY: "0".repeat(64), AUTH_SECRET: "s".repeat(32) };

  it("takes SMTP_URL with MAIL_FROM, and names the variable without repeating a bad value", () => {
    const config = loadConfig({
      ...base,
      SMTP_URL: "smtps://u:p4ss@smtp.example.com:465",
      MAIL_FROM: "a@example.com",
    });
    expect(config.mail).toEqual({ smtpUrl: "smtps://u:p4ss@smtp.example.com:465", from: "a@example.com" });
    expect(() => loadConfig({ ...base, SMTP_URL: "http://u:hunter22@smtp.example.com" })).toThrow(
      /^Invalid SMTP_URL: must be an smtp:\/\/ or smtps:\/\/ URL/,
    );
    try {
      loadConfig({ ...base, SMTP_URL: "http://u:hunter22@smtp.example.com" });
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      expect(String(error)).not.toContain("hunter22");
    }
    expect(() => loadConfig({ ...base, SMTP_URL: "smtp://smtp.example.com" })).toThrow(
      "Missing MAIL_FROM: it is required when SMTP_URL is set",
    );
    expect(() => loadConfig({ ...base, MAIL_FROM: "not an address" })).toThrow(/^Invalid MAIL_FROM/);
  });
});

describe("the development outbox", () => {
  it("writes each mail as one JSON log line with its link when SMTP_URL is not set", async () => {
    const dev = await createTestApp({ captureLogs: true });
    try {
      const owner = (await signUpWithAccount(dev.app, "Dana")).user;
      const email = uniqueEmail("outbox");
      expect(
        (
          await dev.app.inject({
            method: "POST",
            url: "/api/accounts/invitations",
            headers: owner.headers,
            payload: { email },
          })
        ).statusCode,
      ).toBe(201);
      await dev.app.deps.jobs.drain();
      const lines = dev
        .logs()
        .split("\n")
        .filter(Boolean)
        .map(
          (line) => JSON.parse(line) as { msg?: string; outbox?: { to: string; link: string; kind: string } },
        );
      const outbox = lines.filter((line) => line.outbox);
      expect(outbox).toHaveLength(1);
      expect(outbox[0]?.msg).toBe("mail outbox (SMTP_URL is not set)");
      expect(outbox[0]?.outbox).toMatchObject({ kind: "invitation", to: email });
      expect(outbox[0]?.outbox?.link).toMatch(new RegExp(`^${PUBLIC_URL}/invite/.{20,}`));
    } finally {
      await dev.close();
    }
  });
});
