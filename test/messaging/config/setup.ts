import { randomBytes } from "node:crypto";
import { eq } from "drizzle-orm";
import { messagingConfigs } from "../../../src/db/schema/index.js";
import { type Sandbox, type SandboxNumber, startSandbox } from "../../../src/upstream/sandbox/server.js";
import { uniqueDigits } from "../../helpers/fixtures.js";
import { createTestApp, type TestApp, type TestUser } from "../../helpers/harness.js";

export const CONFIG_URL = "/api/messaging/config";

/** The sandbox upstream and an app pointed at it (500 ms upstream timeout). */
export async function startWithSandbox(options: { captureLogs?: boolean } = {}) {
  const sandbox = await startSandbox();
  const t = await createTestApp({
    config: { graphApiUrl: sandbox.url },
    upstreamTimeoutMs: 500,
    captureLogs: options.captureLogs,
  });
  return { sandbox, t };
}

export type TestNumber = Required<
  Pick<SandboxNumber, "phoneNumberId" | "accessToken" | "businessAccountId">
> &
  SandboxNumber;

/** A fresh business number known to the sandbox. */
export function addNumber(sandbox: Sandbox, extra: Partial<SandboxNumber> = {}): TestNumber {
  const n = {
    phoneNumberId: uniqueDigits(15),
    accessToken: `EAAG${randomBytes(20).toString("hex")}`,
    businessAccountId: uniqueDigits(15),
    displayPhoneNumber: "+1 555-010-2030",
    verifiedName: "Test Business",
    ...extra,
  };
  sandbox.addNumber(n);
  return n;
}

/** The save body for a sandbox number, plus overrides. */
export const bodyFor = (n: TestNumber, extra: Record<string, unknown> = {}) => ({
  phone_number_id: n.phoneNumberId,
  access_token: n.accessToken,
  ...extra,
});

export function save(t: TestApp, user: TestUser | undefined, payload: unknown) {
  return t.app.inject({
    method: "POST",
    url: CONFIG_URL,
    headers: user?.headers ?? {},
    ...(typeof payload === "string"
      ? { payload, headers: { ...(user?.headers ?? {}), "content-type": "application/json" } }
      : { payload: payload as object }),
  });
}

export const health = (t: TestApp, user?: TestUser) =>
  t.app.inject({ method: "GET", url: CONFIG_URL, headers: user?.headers ?? {} });
export const remove = (t: TestApp, user?: TestUser) =>
  t.app.inject({ method: "DELETE", url: CONFIG_URL, headers: user?.headers ?? {} });

export async function storedRow(t: TestApp, accountId: string) {
  const [row] = await t.database.db
    .select()
    .from(messagingConfigs)
    .where(eq(messagingConfigs.accountId, accountId));
  return row;
}

/** Upstream failures other than a Meta error envelope, each injected once. */
export const TRANSPORT_FAULTS = [
  {
    name: "a 5xx with Meta's envelope",
    fault: { status: 503, error: { code: 2, message: "Service temporarily unavailable" } },
    message: /Service temporarily unavailable/,
  },
  {
    name: "an HTML body",
    fault: { status: 502, rawBody: "<html><body>502 Bad Gateway</body></html>" },
    message: /HTTP 502/,
  },
  { name: "a timeout", fault: { delayMs: 900 }, message: /did not answer within/ },
  { name: "a dropped connection", fault: { drop: true }, message: /reach|closed/ },
] as const;
