import type { AddressInfo } from "node:net";
import { createCustomer } from "../../src/upstream/sandbox/customer.js";
import { type Sandbox, startSandbox } from "../../src/upstream/sandbox/server.js";
import { createTestApp, signUpWithAccount, type TestApp, type TestUser } from "./harness.js";
import { insertChannelConfig, uniqueDigits } from "./rows.js";

export const APP_SECRET = "test-secret";

/** The app listening on loopback, talking to a sandbox upstream, with its webhook URL. */
export interface SandboxedApp {
  t: TestApp;
  sandbox: Sandbox;
  webhookUrl: string;
  close(): Promise<void>;
}

export async function startSandboxedApp(options: { now?: () => Date } = {}): Promise<SandboxedApp> {
  const sandbox = await startSandbox();
  const t = await createTestApp({
    config: { appSecret: APP_SECRET, graphApiUrl: sandbox.url },
    upstreamTimeoutMs: 2000,
    now: options.now,
  });
  await t.app.listen({ port: 0, host: "127.0.0.1" });
  const webhookUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}/api/messaging/webhook`;
  return {
    t,
    sandbox,
    webhookUrl,
    async close() {
      await t.close();
      await sandbox.close();
    },
  };
}

export interface Business {
  user: TestUser;
  accountId: string;
  phoneNumberId: string;
  businessAccountId: string;
  accessToken: string;
}

/** An account with a channel the sandbox knows (number, token and business account). */
export async function business(
  s: SandboxedApp,
  options: { businessAccountId?: string | null } = {},
): Promise<Business> {
  const { user, accountId } = await signUpWithAccount(s.t.app);
  const businessAccountId =
    options.businessAccountId === undefined ? uniqueDigits(15) : options.businessAccountId;
  const { row, accessToken } = await insertChannelConfig(s.t, {
    accountId,
    userId: user.id,
    businessAccountId,
  });
  s.sandbox.addNumber({
    phoneNumberId: row.phoneNumberId,
    accessToken,
    businessAccountId: businessAccountId ?? undefined,
  });
  return {
    user,
    accountId,
    phoneNumberId: row.phoneNumberId,
    businessAccountId: businessAccountId ?? "",
    accessToken,
  };
}

/** A simulated customer of the business, posting to the app's webhook; waits for the jobs it causes. */
export function customerOf(s: SandboxedApp, b: Business, waId = uniqueDigits(11), name = "Sheena Nelson") {
  const customer = createCustomer({
    webhookUrl: s.webhookUrl,
    appSecret: APP_SECRET,
    phoneNumberId: b.phoneNumberId,
    businessAccountId: b.businessAccountId,
    waId,
    name,
  });
  const drained = <T>(p: Promise<T>) =>
    p.then(async (value) => {
      await s.t.app.deps.jobs.drain();
      return value;
    });
  return {
    waId,
    text: (body: string, options?: { timestamp?: number }) => drained(customer.text(body, options)),
    media: (file: Parameters<typeof customer.media>[0]) => drained(customer.media(file)),
    status: (update: Parameters<typeof customer.status>[0]) => drained(customer.status(update)),
  };
}

/** The business's conversations as the inbox lists them. */
export async function conversationsOf(s: SandboxedApp, b: Business) {
  const response = await s.t.app.inject({ url: "/api/conversations", headers: b.user.headers });
  // biome-ignore lint/suspicious/noExplicitAny: API JSON read in tests
  return response.json().conversations as any[];
}

export async function messagesOf(s: SandboxedApp, b: Business, conversationId: string) {
  const response = await s.t.app.inject({
    url: `/api/conversations/${conversationId}/messages`,
    headers: b.user.headers,
  });
  // biome-ignore lint/suspicious/noExplicitAny: API JSON read in tests
  return response.json().messages as any[];
}

/** Requests the sandbox received on a path ending like this. */
export const upstreamCalls = (s: SandboxedApp, method: string, ending: string | RegExp) =>
  s.sandbox
    .requests()
    .filter(
      (r) =>
        r.method === method && (typeof ending === "string" ? r.path.endsWith(ending) : ending.test(r.path)),
    );
