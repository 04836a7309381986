/**
 * The common setup of the integration tests as vitest fixtures (`test.extend`): a test names
 * what it needs in its context and gets it ready, and cleaned up after.
 *
 *   import { appTest as it } from "./fixtures.js";
 *   it("…", async ({ t, owner }) => { … t.app.inject({ headers: owner.user.headers }) … });
 *
 * - `t`: the app on its own database (createTestApp), one per test file.
 * - `owner`: a new user who owns a new account (signUpWithAccount on `t`), one per test.
 *
 *   import { sandboxTest as it } from "./fixtures.js";
 *   it("…", async ({ s, biz, customer }) => { … });
 *
 * - `s`: the app listening on loopback with a Graph API sandbox upstream (startSandboxedApp), one
 *   per test file; the sandbox's request log is emptied before each test.
 * - `biz`: an account with a channel the sandbox knows (number, token, business account), one per test.
 * - `customer`: a customer of `biz` writing to the app's webhook (customerOf), one per test.
 *
 * Files that need another configuration (an app secret, a clock, a rate limit) build their app
 * with createTestApp or startSandboxedApp as before. The rows helpers (insertContact, …) are
 * re-exported from rows.ts.
 */
import { test } from "vitest";
import { createTestApp, signUpWithAccount, type TestApp, type TestUser } from "./harness.js";
import { type Business, business, customerOf, type SandboxedApp, startSandboxedApp } from "./sandbox-app.js";

export * from "./rows.js";

export interface Owner {
  user: TestUser;
  accountId: string;
}

export const appTest = test.extend<{ t: TestApp; owner: Owner }>({
  t: [
    // biome-ignore lint/correctness/noEmptyPattern: vitest reads the fixtures a fixture uses from its first parameter
    async ({}, use) => {
      const t = await createTestApp();
      await use(t);
      await t.close();
    },
    { scope: "file" },
  ],
  owner: async ({ t }, use) => {
    await use(await signUpWithAccount(t.app));
  },
});

export const sandboxTest = test.extend<{
  s: SandboxedApp;
  emptyLog: undefined;
  biz: Business;
  customer: ReturnType<typeof customerOf>;
}>({
  s: [
    // biome-ignore lint/correctness/noEmptyPattern: vitest reads the fixtures a fixture uses from its first parameter
    async ({}, use) => {
      const s = await startSandboxedApp();
      await use(s);
      await s.close();
    },
    { scope: "file" },
  ],
  emptyLog: [
    async ({ s }, use) => {
      s.sandbox.clearRequests();
      await use(undefined);
    },
    { auto: true },
  ],
  biz: async ({ s }, use) => {
    await use(await business(s));
  },
  customer: async ({ s, biz }, use) => {
    await use(customerOf(s, biz));
  },
});
