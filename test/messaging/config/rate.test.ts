import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Sandbox } from "../../../src/upstream/sandbox/server.js";
import { signUpWithAccount, type TestApp } from "../../helpers/harness.js";
import { addNumber, bodyFor, health, save, startWithSandbox, storedRow } from "./setup.js";

let sandbox: Sandbox;
let t: TestApp;
beforeAll(async () => {
  ({ sandbox, t } = await startWithSandbox());
});
afterAll(async () => {
  await t.close();
  await sandbox.close();
});
beforeEach(() => sandbox.reset());

describe("messages_per_second on the channel configuration", () => {
  it("defaults to 80, shown by GET", async () => {
    const { user } = await signUpWithAccount(t.app);
    const n = addNumber(sandbox, { pin: "123456" });
    expect((await save(t, user, bodyFor(n))).statusCode).toBe(200);
    expect((await health(t, user)).json().config.messages_per_second).toBe(80);
  });

  it("takes a whole number from 1 to 1000, kept when a later save leaves it out", async () => {
    const { user, accountId } = await signUpWithAccount(t.app);
    const n = addNumber(sandbox, { pin: "123456" });
    for (const rate of [1, 1000, 250]) {
      const r = await save(t, user, bodyFor(n, { messages_per_second: rate }));
      expect(r.statusCode, String(rate)).toBe(200);
      expect((await health(t, user)).json().config.messages_per_second).toBe(rate);
    }
    expect((await save(t, user, bodyFor(n))).statusCode).toBe(200);
    expect((await storedRow(t, accountId))?.messagesPerSecond).toBe(250);
  });

  it("answers 400 naming the field for anything else, before calling Meta, and changes nothing", async () => {
    const { user, accountId } = await signUpWithAccount(t.app);
    const n = addNumber(sandbox, { pin: "123456" });
    expect((await save(t, user, bodyFor(n, { messages_per_second: 20 }))).statusCode).toBe(200);
    sandbox.clearRequests();
    for (const rate of [0, 1001, -5, 12.5, "80", null, true, [80], { n: 80 }]) {
      const r = await save(t, user, bodyFor(n, { messages_per_second: rate }));
      expect(r.statusCode, JSON.stringify(rate)).toBe(400);
      expect(r.json()).toEqual({ error: "messages_per_second must be a whole number from 1 to 1000" });
    }
    expect(sandbox.requests()).toEqual([]);
    expect((await storedRow(t, accountId))?.messagesPerSecond).toBe(20);
  });
});
