import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  activeFlow,
  type Customer,
  conversationOf,
  createWorld,
  customer,
  sentMessages,
  type World,
} from "../flows/runner/helpers.js";
import { addMember } from "../helpers/harness.js";

// Berlin leaves summer time on Sunday 2026-10-25 (03:00 CEST -> 02:00 CET).
const FRIDAY_0930_CEST = "2026-10-23T07:30:00Z";
const MONDAY_0830_CET = "2026-10-26T07:30:00Z"; // 09:30 on a summer-time clock: open, wrongly
const HOURS = {
  timezone: "Europe/Berlin",
  weekly: {
    mon: [["09:00", "17:00"]],
    tue: [
      ["09:00", "12:00"],
      ["13:00", "17:00"],
    ],
    fri: [["09:00", "17:00"]],
  },
  holidays: ["2026-12-25"],
  away_message: "We are closed; we answer from 9:00.",
};

let clock = new Date(FRIDAY_0930_CEST);
const at = (iso: string) => {
  clock = new Date(iso);
};
let w: World;
beforeAll(async () => {
  w = await createWorld({ now: () => clock });
});
afterAll(() => w.close());

const call = (method: "GET" | "PUT" | "POST", url: string, payload?: unknown, headers = w.owner.headers) =>
  w.t.app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload: payload as object }) });

const texts = (who: Customer) =>
  sentMessages(w, who.waId).map((b) => b.text?.body ?? b.interactive?.body?.text);
const AWAY = HOURS.away_message;

describe("business hours", () => {
  it("answers 400 naming the field for an unknown timezone, reversed or overlapping ranges, bad days and holidays", async () => {
    const cases: Array<[object, RegExp]> = [
      [{ ...HOURS, timezone: "Mars/Olympus" }, /^timezone: unknown timezone/],
      [{ ...HOURS, timezone: 5 }, /^timezone/],
      [
        { ...HOURS, weekly: { mon: [["17:00", "09:00"]] } },
        /^weekly\.mon\[0\]: the range ends before it starts/,
      ],
      [
        {
          ...HOURS,
          weekly: {
            wed: [
              ["09:00", "13:00"],
              ["12:00", "17:00"],
            ],
          },
        },
        /^weekly\.wed: ranges overlap/,
      ],
      [{ ...HOURS, weekly: { mon: [["9", "17:00"]] } }, /^weekly\.mon\[0\]/],
      [{ ...HOURS, weekly: { someday: [] } }, /^weekly\.someday: unknown day/],
      [{ ...HOURS, holidays: ["2026-02-30"] }, /^holidays\[0\]/],
      [{ ...HOURS, away_message: "" }, /^away_message/],
    ];
    for (const [body, error] of cases) {
      const response = await call("PUT", "/api/settings/business-hours", body);
      expect(response.statusCode, JSON.stringify(body)).toBe(400);
      expect(response.json().error).toMatch(error);
    }
    const mate = await addMember(w.t.app, w.owner, "Mate");
    expect((await call("PUT", "/api/settings/business-hours", HOURS, mate.headers)).statusCode).toBe(403);
    expect((await call("GET", "/api/settings/business-hours")).json()).toEqual({ business_hours: null });
  });

  it("stores them and tells whether the business is open now, across the change to winter time", async () => {
    at(FRIDAY_0930_CEST);
    const put = await call("PUT", "/api/settings/business-hours", HOURS);
    expect(put.statusCode, put.body).toBe(200);
    expect(put.json().business_hours).toMatchObject({
      timezone: "Europe/Berlin",
      weekly: { mon: [["09:00", "17:00"]], sun: [] },
      holidays: ["2026-12-25"],
      away_message: AWAY,
      open_now: true,
    });
    at(MONDAY_0830_CET);
    expect((await call("GET", "/api/settings/business-hours")).json().business_hours.open_now).toBe(false);
    at("2026-10-26T08:00:00Z"); // 09:00 CET
    expect((await call("GET", "/api/settings/business-hours")).json().business_hours.open_now).toBe(true);
    at("2026-12-25T10:00:00Z"); // a Friday, a holiday
    expect((await call("GET", "/api/settings/business-hours")).json().business_hours.open_now).toBe(false);
  });

  it("sends the away message once per closed period, across the change to winter time", async () => {
    at(FRIDAY_0930_CEST);
    const fay = customer(w, "Fay");
    await fay.text("Are you there?");
    expect(texts(fay)).toEqual([]);

    at("2026-10-23T15:30:00Z"); // Friday 17:30 CEST: closed
    await fay.text("Hello?");
    expect(texts(fay)).toEqual([AWAY]);
    at("2026-10-25T10:00:00Z"); // Sunday, the same closed period
    await fay.text("Anyone?");
    at(MONDAY_0830_CET);
    await fay.text("Still closed?");
    expect(texts(fay)).toEqual([AWAY]);

    at("2026-10-26T16:30:00Z"); // Monday 17:30 CET: a new closed period
    await fay.text("Back again");
    expect(texts(fay)).toEqual([AWAY, AWAY]);
    const { messages } = await conversationOf(w, fay);
    expect(messages.filter((m) => m.text === AWAY).every((m) => m.sender_type === "bot")).toBe(true);
  });

  it("sends no away message within 5 minutes of an agent's reply, nor when a flow took the message", async () => {
    at("2026-10-27T06:00:00Z"); // Tuesday 07:00 CET: closed
    const gus = customer(w, "Gus");
    await gus.text("Early bird");
    expect(texts(gus)).toEqual([AWAY]);
    at("2026-10-27T11:10:00Z"); // 12:10, the lunch break: a new closed period
    const { id } = await conversationOf(w, gus);
    const reply = await call("POST", `/api/conversations/${id}/messages`, { text: "I am here anyway" });
    expect(reply.statusCode, reply.body).toBe(201);
    at("2026-10-27T11:13:00Z");
    await gus.text("Thanks!");
    expect(texts(gus)).toEqual([AWAY, "I am here anyway"]);

    await activeFlow(w, {
      trigger_config: { keywords: ["opening"], match_type: "exact" },
      nodes: [
        { node_key: "start", node_type: "start", config: { next_node_key: "hours" } },
        {
          node_key: "hours",
          node_type: "business_hours",
          config: { open_node_key: "open", closed_node_key: "closed" },
        },
        { node_key: "open", node_type: "send_message", config: { text: "We are open" } },
        { node_key: "closed", node_type: "send_message", config: { text: "We are closed now" } },
      ],
    });
    const hal = customer(w, "Hal");
    await hal.text("opening");
    expect(texts(hal)).toEqual(["We are closed now"]);
  });

  it("the business_hours node takes the open branch inside the hours (wall clock after the change)", async () => {
    at("2026-10-26T08:05:00Z"); // Monday 09:05 CET
    const ivy = customer(w, "Ivy");
    await ivy.text("opening");
    expect(texts(ivy)).toEqual(["We are open"]);
  });

  it("a flow with outside_business_hours_only starts only while closed", async () => {
    await activeFlow(w, {
      trigger_config: { keywords: ["urgent"], match_type: "exact", outside_business_hours_only: true },
      nodes: [
        { node_key: "start", node_type: "start", config: { next_node_key: "night" } },
        { node_key: "night", node_type: "send_message", config: { text: "Night desk: leave a message" } },
      ],
    });
    at("2026-10-26T09:00:00Z"); // Monday 10:00 CET: open
    const jo = customer(w, "Jo");
    await jo.text("urgent");
    expect(texts(jo)).toEqual([]);
    at("2026-10-26T20:00:00Z"); // 21:00: closed
    await jo.text("urgent");
    expect(texts(jo)).toEqual(["Night desk: leave a message"]);
  });

  it("rejects a business_hours node without its branches on activation, and a bad trigger option", async () => {
    const created = await call("POST", "/api/flows", {
      name: "Hours check",
      trigger_type: "keyword",
      trigger_config: { keywords: ["x"], outside_business_hours_only: "yes" },
    });
    const id = created.json().flow.id;
    await w.t.app.inject({
      method: "PUT",
      url: `/api/flows/${id}`,
      headers: w.owner.headers,
      payload: {
        entry_node_id: "start",
        nodes: [
          { node_key: "start", node_type: "start", config: { next_node_key: "h" } },
          { node_key: "h", node_type: "business_hours", config: { open_node_key: "start" } },
        ],
      },
    });
    const activate = await call("POST", `/api/flows/${id}/activate`, { status: "active" });
    expect(activate.statusCode).toBe(422);
    const messages = activate.json().issues.map((i: { message: string }) => i.message);
    expect(messages).toContain("trigger_config.outside_business_hours_only must be true or false");
    expect(messages.some((m: string) => /closed_node_key/.test(m))).toBe(true);
  });
});
