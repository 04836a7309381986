import { describe, expect } from "vitest";
import { appTest as it } from "../helpers/fixtures.js";
import { addMember, signUpWithAccount, type TestApp, type TestUser } from "../helpers/harness.js";

const as = (t: TestApp, user: TestUser, method: "GET" | "PATCH", payload?: unknown) =>
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
  it("shows the defaults to every member until the owner changes one, then keeps the rest", async ({
    t,
    owner: { user },
  }) => {
    const member = await addMember(t.app, user);
    expect((await as(t, member, "GET")).json()).toEqual({ settings: DEFAULTS });

    const changed = await as(t, user, "PATCH", {
      default_country: "br",
      opt_out_keywords: ["PARAR", " Sair "],
    });
    expect(changed.statusCode).toBe(200);
    const expected = { ...DEFAULTS, default_country: "BR", opt_out_keywords: ["PARAR", "Sair"] };
    expect(changed.json()).toEqual({ settings: expected });

    const again = await as(t, user, "PATCH", { auto_assign: { mode: "least_busy", max_open_per_agent: 5 } });
    expect(again.json().settings).toEqual({
      ...expected,
      auto_assign: { mode: "least_busy", max_open_per_agent: 5 },
    });
    const modeOnly = await as(t, user, "PATCH", { auto_assign: { mode: "round_robin" } });
    expect(modeOnly.json().settings.auto_assign).toEqual({ mode: "round_robin", max_open_per_agent: 5 });
    expect((await as(t, member, "GET")).json().settings.default_country).toBe("BR");
  });

  it("keeps each account's settings to itself", async ({ t, owner: a }) => {
    const b = await signUpWithAccount(t.app);
    await as(t, a.user, "PATCH", { agent_reply_pause_minutes: 0 });
    expect((await as(t, b.user, "GET")).json().settings.agent_reply_pause_minutes).toBe(30);
    expect((await as(t, a.user, "GET")).json().settings.agent_reply_pause_minutes).toBe(0);
  });

  it("lets only the owner change them", async ({ t, owner: { user } }) => {
    const member = await addMember(t.app, user);
    const res = await as(t, member, "PATCH", { agent_reply_pause_minutes: 5 });
    expect(res.statusCode).toBe(403);
    expect((await as(t, user, "GET")).json().settings.agent_reply_pause_minutes).toBe(30);
  });

  it.for([
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
  ] as const)(
    "refuses %j with a 400 naming %s, and changes nothing",
    async ([body, field], { t, owner: { user } }) => {
      const res = await as(t, user, "PATCH", body);
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toContain(field);
      expect((await as(t, user, "GET")).json()).toEqual({ settings: DEFAULTS });
    },
  );

  it("refuses an empty change", async ({ t, owner: { user } }) => {
    const res = await as(t, user, "PATCH", {});
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatch(/nothing to change/i);
  });
});
