import { eq } from "drizzle-orm";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { flowRuns } from "../../src/db/schema/index.js";
import { buttonReplyPayload, listReplyPayload } from "../../src/upstream/sandbox/webhook-payloads.js";
import {
  activeFlow,
  type Customer,
  conversationOf,
  createWorld,
  customer,
  postWebhook,
  runFor,
  sentMessages,
  type World,
} from "../flows/runner/helpers.js";

let w: World;
beforeAll(async () => {
  w = await createWorld();
});
afterAll(() => w.close());
beforeEach(() => {
  w.sandbox.reset();
  w.sandbox.addNumber({ phoneNumberId: w.phoneNumberId, accessToken: w.accessToken });
});

/** start -> menu (a: more, b: bye_b); more is a list (x: bye_x). */
const twoMenus = (keyword: string) =>
  activeFlow(w, {
    trigger_config: { keywords: [keyword], match_type: "exact" },
    nodes: [
      { node_key: "start", node_type: "start", config: { next_node_key: "menu" } },
      {
        node_key: "menu",
        node_type: "send_buttons",
        config: {
          text: "Pick one",
          buttons: [
            { reply_id: "a", title: "More", next_node_key: "more" },
            { reply_id: "b", title: "Bye", next_node_key: "bye_b" },
          ],
        },
      },
      {
        node_key: "more",
        node_type: "send_list",
        config: {
          text: "Pick a row",
          button_label: "Rows",
          sections: [{ rows: [{ reply_id: "x", title: "X", next_node_key: "bye_x" }] }],
        },
      },
      { node_key: "bye_b", node_type: "send_message", config: { text: "Bye from B" } },
      { node_key: "bye_x", node_type: "send_message", config: { text: "Bye from X" } },
    ],
  });

/** When the run's pending question went out (whole seconds) and Meta's id of each question sent. */
async function asked(flowId: string, who: Customer) {
  const { contactId } = await conversationOf(w, who);
  const [run] = await w.t.database.db.select().from(flowRuns).where(eq(flowRuns.contactId, contactId));
  const { events } = await runFor(w, flowId, who);
  const ids = events
    .filter((e) => e.event_type === "message_sent")
    .map((e) => ({ node: e.node_key, id: e.payload.upstream_message_id as string }));
  return { second: Math.floor(run!.questionSentAt!.getTime() / 1000), ids };
}

/** A tap stamped at `timestamp` (Meta's whole seconds), delivered and processed. */
async function tap(
  who: Customer,
  kind: "button" | "list",
  replyId: string,
  timestamp: number,
  contextMessageId?: string,
) {
  const build = kind === "button" ? buttonReplyPayload : listReplyPayload;
  const { payload } = build({
    phoneNumberId: w.phoneNumberId,
    from: who.waId,
    replyId,
    title: replyId,
    timestamp,
    ...(contextMessageId ? { contextMessageId } : {}),
  });
  await postWebhook(w, payload);
  await w.t.app.deps.jobs.drain();
}

const texts = (who: Customer) =>
  sentMessages(w, who.waId).map((b) => b.text?.body ?? b.interactive?.body?.text);

describe("taps are answers", () => {
  it("a tap in the same second as the question advances the run, without context", async () => {
    const flowId = await twoMenus("fast1");
    const kim = customer(w, "Kim");
    await kim.text("fast1");
    const { second } = await asked(flowId, kim);
    await tap(kim, "button", "b", second);
    const { run, events } = await runFor(w, flowId, kim);
    expect(run).toMatchObject({ status: "completed" });
    expect(events.find((e) => e.event_type === "reply_received")).toMatchObject({
      node_key: "menu",
      payload: { reply_id: "b" },
    });
    expect(texts(kim)).toEqual(["Pick one", "Bye from B"]);
  });

  it("a tap in the same second as the question advances the run, with its context", async () => {
    const flowId = await twoMenus("fast2");
    const lee = customer(w, "Lee");
    await lee.text("fast2");
    const { second, ids } = await asked(flowId, lee);
    await tap(lee, "button", "a", second, ids[0]!.id);
    const now = await asked(flowId, lee);
    expect((await runFor(w, flowId, lee)).run.current_node_key).toBe("more");
    // The list's answer too, however fast.
    await tap(lee, "list", "x", now.second, now.ids[1]!.id);
    expect((await runFor(w, flowId, lee)).run).toMatchObject({ status: "completed" });
    expect(texts(lee)).toEqual(["Pick one", "Pick a row", "Bye from X"]);
  });

  it("a tap on an earlier menu of the run follows that option's branch", async () => {
    const flowId = await twoMenus("old");
    const max = customer(w, "Max");
    await max.text("old");
    const first = await asked(flowId, max);
    await max.button("a");
    expect((await runFor(w, flowId, max)).run.current_node_key).toBe("more");
    // Back on the first menu, the customer taps "Bye" (not an option of the list).
    await tap(max, "button", "b", first.second + 5, first.ids[0]!.id);
    const { run, events } = await runFor(w, flowId, max);
    expect(run).toMatchObject({ status: "completed" });
    expect(events.filter((e) => e.event_type === "reply_received").at(-1)).toMatchObject({
      node_key: "menu",
      payload: { reply_id: "b", earlier_question: true },
    });
    expect(texts(max)).toEqual(["Pick one", "Pick a row", "Bye from B"]);
  });

  it("an old option without context is no answer to the pending list: the fallback applies", async () => {
    const flowId = await twoMenus("nocontext");
    const nia = customer(w, "Nia");
    await nia.text("nocontext");
    await nia.button("a");
    await nia.button("b");
    const { run, events } = await runFor(w, flowId, nia);
    expect(run).toMatchObject({ status: "active", current_node_key: "more", reprompt_count: 1 });
    expect(events.map((e) => e.event_type)).toContain("fallback_fired");
  });

  it("free text at a button step keeps the fallback, and in the question's second is still no answer", async () => {
    const flowId = await twoMenus("free");
    const ola = customer(w, "Ola");
    await ola.text("free");
    await ola.text("what?");
    const { run, events } = await runFor(w, flowId, ola);
    expect(run).toMatchObject({ status: "active", current_node_key: "menu", reprompt_count: 1 });
    expect(events.filter((e) => e.event_type === "fallback_fired")).toHaveLength(1);
    expect(texts(ola)).toEqual(["Pick one", "Pick one"]);
  });
});
