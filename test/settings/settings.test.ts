import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  addMember,
  createTestApp,
  signUpWithAccount,
  type TestApp,
  type TestUser,
} from "../helpers/harness.js";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const as = (user: TestUser, method: "GET" | "PATCH", payload?: unknown) =>
  t.app.inject({
    method,
    url: "/api/settings",
    headers: user.headers,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });

const DEFAULTS = {
  default_country: null,
  opt_out_keywords: ["STOP", "UNSUBSCRIBE"],
  opt_in_keywords: ["START"],
  opt_out_reply: null,
  agent_reply_pause_minutes: 30,
  auto_assign: { mode: "off", max_open_per_agent: null },
};

describe("account settings", () => {
  it("shows the defaults to every member until the owner changes one, then keeps the rest", async () => {
    const { user } = await signUpWithAccount(t.app);
    const member = await addMember(t.app, user);
    expect((await as(member, "GET")).json()).toEqual({ settings: DEFAULTS });

    const changed = await as(user, "PATCH", { default_country: "br", opt_out_keywords: ["PARAR", " Sair "] });
    expect(changed.statusCode).toBe(200);
    const expected = { ...DEFAULTS, default_country: "BR", opt_out_keywords: ["PARAR", "Sair"] };
    expect(changed.json()).toEqual({ settings: expected });

    const again = await as(user, "PATCH", { auto_assign: { mode: "least_busy", max_open_per_agent: 5 } });
    expect(again.json().settings).toEqual({
      ...expected,
      auto_assign: { mode: "least_busy", max_open_per_agent: 5 },
    });
    const modeOnly = await as(user, "PATCH", { auto_assign: { mode: "round_robin" } });
    expect(modeOnly.json().settings.auto_assign).toEqual({ mode: "round_robin", max_open_per_agent: 5 });
    expect((await as(member, "GET")).json().settings.default_country).toBe("BR");
  });

  it("keeps each account's settings to itself", async () => {
    const a = await signUpWithAccount(t.app);
    const b = await signUpWithAccount(t.app);
    await as(a.user, "PATCH", { agent_reply_pause_minutes: 0 });
    expect((await as(b.user, "GET")).json().settings.agent_reply_pause_minutes).toBe(30);
    expect((await as(a.user, "GET")).json().settings.agent_reply_pause_minutes).toBe(0);
  });

  it("lets only the owner change them", async () => {
    const { user } = await signUpWithAccount(t.app);
    const member = await addMember(t.app, user);
    const res = await as(member, "PATCH", { agent_reply_pause_minutes: 5 });
    expect(res.statusCode).toBe(403);
    expect((await as(user, "GET")).json().settings.agent_reply_pause_minutes).toBe(30);
  });

  it.each([
    [{ default_country: "XX" }, "default_country"],
    [{ default_country: 7 }, "default_country"],
    [{ opt_out_keywords: "STOP" }, "opt_out_keywords"],
    [{ opt_out_keywords: [""] }, "opt_out_keywords.0"],
    [{ agent_reply_pause_minutes: -1 }, "agent_reply_pause_minutes"],
    [{ agent_reply_pause_minutes: 1.5 }, "agent_reply_pause_minutes"],
    [{ auto_assign: { mode: "random" } }, "auto_assign.mode"],
    [{ auto_assign: { mode: "least_busy", max_open_per_agent: 0 } }, "auto_assign.max_open_per_agent"],
    [{ opt_out_reply: "a\u0000b" }, "opt_out_reply"],
    [{ colour: "blue" }, "colour"],
  ])("refuses %j with a 400 naming %s, and changes nothing", async (body, field) => {
    const { user } = await signUpWithAccount(t.app);
    const res = await as(user, "PATCH", body);
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toContain(field);
    expect((await as(user, "GET")).json()).toEqual({ settings: DEFAULTS });
  });

  it("refuses an empty change", async () => {
    const { user } = await signUpWithAccount(t.app);
    const res = await as(user, "PATCH", {});
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatch(/nothing to change/i);
  });
});
