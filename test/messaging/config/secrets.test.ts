import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox } from "../../../src/upstream/sandbox/server.js";
import { createTestApp, signUpWithAccount, type TestApp } from "../../helpers/harness.js";
import { addNumber, bodyFor, health, remove, save, startWithSandbox } from "./setup.js";

let sandbox: Sandbox;
let t: TestApp;
beforeAll(async () => {
  ({ sandbox, t } = await startWithSandbox({ captureLogs: true }));
});
afterAll(async () => {
  await t.close();
  await sandbox.close();
});

describe("tokens never leave the server", () => {
  it("keeps access and verify tokens out of every answer and log line over a full cycle", async () => {
    const { user, accountId } = await signUpWithAccount(t.app);
    const verifyToken = `verify-${randomBytes(12).toString("hex")}`;
    const n = addNumber(sandbox, { pin: "424242" });
    const wrongToken = `EAAG-wrong-${randomBytes(12).toString("hex")}`;
    const answers: string[] = [];
    const record = async (p: Promise<{ body: string; statusCode: number }>) => {
      const r = await p;
      answers.push(r.body);
      return r;
    };

    // Verification failure, registration failure, success, health (ok and failing), errors, delete.
    await record(save(t, user, bodyFor(n, { access_token: wrongToken, verify_token: verifyToken })));
    await record(
      save(
        t,
        user,
        bodyFor(n, { verify_token: verifyToken, pin: "111111", business_account_id: n.businessAccountId }),
      ),
    );
    await record(
      save(
        t,
        user,
        bodyFor(n, { verify_token: verifyToken, pin: "424242", business_account_id: n.businessAccountId }),
      ),
    );
    await record(health(t, user));
    sandbox.inject(
      { method: "POST", path: "/subscribed_apps" },
      { status: 500, rawBody: "<html>down</html>" },
    );
    await record(
      save(t, user, bodyFor(n, { verify_token: verifyToken, business_account_id: n.businessAccountId })),
    );
    sandbox.inject({ method: "GET" }, { drop: true });
    await record(health(t, user));
    await record(
      t.app.inject({
        method: "POST",
        url: "/api/messaging/config",
        headers: user.headers,
        payload: `{"access_token":"${n.accessToken}"`,
      }),
    );
    const rekeyed = await createTestApp({
      databaseUrl: t.config.databaseUrl!,
      captureLogs: true,
      config: { graphApiUrl: sandbox.url, authSecret: t.config.authSecret, encryptionKey: "bad" },
    });
    try {
      await record(health(rekeyed, user));
      await record(save(rekeyed, user, bodyFor(n, { verify_token: verifyToken })));
    } finally {
      await rekeyed.close();
    }
    await record(remove(t, user));

    const logs = t.logs() + rekeyed.logs();
    // The cycle was logged (a test of an empty log would prove nothing).
    expect(logs).toContain("messaging configuration saved");
    expect(logs).toContain("registering the phone number failed");
    expect(logs).toContain("subscribing the business account to the app failed");
    expect(logs).toContain("messaging configuration deleted");
    expect(logs).toContain("encrypting the channel tokens failed");
    expect(logs).toContain(accountId);
    for (const secret of [n.accessToken, wrongToken, verifyToken]) {
      expect(logs).not.toContain(secret);
      for (const body of answers) expect(body).not.toContain(secret);
    }
    // The sandbox saw the token only in its authorization header, and masks it in its log.
    expect(JSON.stringify(sandbox.requests())).not.toContain(n.accessToken);
  });
});
