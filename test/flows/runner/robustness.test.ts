import { eq } from "drizzle-orm";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { flowMessageReceipts, flowRunEvents, flowRuns, messages } from "../../../src/db/schema/index.js";
import { offerInboundMessage } from "../../../src/flows/runner/dispatch.js";
import { MAX_STEPS_PER_ADVANCE } from "../../../src/flows/runner/engine.js";
import { statusPayload } from "../../../src/upstream/sandbox/webhook-payloads.js";
import { insertMessage } from "../../helpers/fixtures.js";
import {
  activeFlow,
  activeRunCount,
  api,
  conversationOf,
  createWorld,
  customer,
  deleteFlow,
  executionCount,
  getFlowNodes,
  postWebhook,
  putFlow,
  runFor,
  runsOf,
  sentMessages,
  type World,
} from "./helpers.js";

let w: World;

beforeAll(async () => {
  w = await createWorld();
});
afterAll(() => w.close());
/** Forgets faults and recorded requests; the sandbox forgets numbers too, so the world's is added back. */
function resetSandbox() {
  w.sandbox.reset();
  w.sandbox.addNumber({ phoneNumberId: w.phoneNumberId, accessToken: w.accessToken });
}

/** A flow of its own per test, so runs and triggers of one test never meet another's. */
const keywordFlow = (keyword: string, nodes: Parameters<typeof activeFlow>[1]["nodes"], extra = {}) =>
  activeFlow(w, { trigger_config: { keywords: [keyword], match_type: "exact" }, nodes, ...extra });

const menuNodes = [
  { node_key: "start", node_type: "start", config: { next_node_key: "menu" } },
  {
    node_key: "menu",
    node_type: "send_buttons",
    config: {
      text: "Pick one",
      buttons: [
        { reply_id: "a", title: "A", next_node_key: "say_a" },
        { reply_id: "b", title: "B", next_node_key: "say_b" },
      ],
    },
  },
  { node_key: "say_a", node_type: "send_message", config: { text: "You chose A", next_node_key: "done" } },
  { node_key: "say_b", node_type: "send_message", config: { text: "You chose B", next_node_key: "done" } },
  { node_key: "done", node_type: "end", config: {} },
];

type StoredText = { id: string; text: string | null };

/** The event the webhook emits for a stored text of a known conversation (not its first). */
function storedEvent(thread: { contactId: string; conversationId: string }, message: StoredText) {
  return {
    accountId: w.accountId,
    ...thread,
    messageId: message.id,
    firstInbound: false,
    messageType: "text",
    text: message.text,
  };
}

describe("concurrency", () => {
  beforeEach(resetSandbox);

  it("two simultaneous first messages from one contact start one run", async () => {
    const flowId = await keywordFlow("race", menuNodes);
    const kim = customer(w, "Kim");
    const first = kim.textPayload("race");
    const second = kim.textPayload("race");
    await Promise.all([postWebhook(w, first.payload), postWebhook(w, second.payload)]);
    await w.t.app.deps.jobs.drain();

    const runs = await runsOf(w, flowId);
    expect(runs).toHaveLength(1);
    expect(await executionCount(w, flowId)).toBe(1);
    const { events } = await runFor(w, flowId, kim);
    expect(events.filter((e) => e.event_type === "started")).toHaveLength(1);
    // Each message was taken once: one started the run, the other lost the race or was a reply to it.
    const receipts = await w.t.database.db.select().from(flowMessageReceipts);
    const ids = [first.messageId, second.messageId];
    const stored = await w.t.database.db.select().from(messages);
    const ours = stored.filter((m) => ids.includes(m.messageId ?? "")).map((m) => m.id);
    const outcomes = receipts.filter((r) => ours.includes(r.messageId)).map((r) => r.outcome);
    expect(outcomes.sort()).toContain("started");
    expect(outcomes).toHaveLength(2);
  });

  it("many messages of one contact dispatched at once still make exactly one active run", async () => {
    const flowId = await keywordFlow("storm", menuNodes);
    const lee = customer(w, "Lee");
    await lee.text("warm up"); // creates the contact and conversation
    const { contactId, id: conversationId } = await conversationOf(w, lee);
    const batch = await Promise.all(
      Array.from({ length: 8 }, () =>
        insertMessage(w.t, { accountId: w.accountId, conversationId, text: "storm" }),
      ),
    );
    const outcomes = await Promise.all(
      batch.map((m) => offerInboundMessage(w.t.app.deps, storedEvent({ contactId, conversationId }, m))),
    );
    expect(outcomes.filter((o) => o === "started")).toHaveLength(1);
    expect(outcomes.every((o) => ["started", "lost_race", "advanced"].includes(o))).toBe(true);
    expect(await activeRunCount(w, contactId)).toBe(1);
    expect(await runsOf(w, flowId)).toHaveLength(1);
  });

  it("settles a message no flow wants without a receipt, and still starts a flow on one it wants", async () => {
    await keywordFlow("wanted", menuNodes);
    const ivy = customer(w, "Ivy");
    await ivy.text("hello there");
    const { contactId, id: conversationId } = await conversationOf(w, ivy);
    const event = (m: StoredText) => storedEvent({ contactId, conversationId }, m);
    const chatter = await insertMessage(w.t, {
      accountId: w.accountId,
      conversationId,
      text: "just chatting",
    });
    expect(await offerInboundMessage(w.t.app.deps, event(chatter))).toBe("no_trigger");
    const receipts = await w.t.database.db.select().from(flowMessageReceipts);
    expect(receipts.some((r) => r.messageId === chatter.id)).toBe(false);

    const wanted = await insertMessage(w.t, { accountId: w.accountId, conversationId, text: "wanted" });
    expect(await offerInboundMessage(w.t.app.deps, event(wanted))).toBe("started");
    expect(await activeRunCount(w, contactId)).toBe(1);
  });

  it("the same event delivered twice to the runner is taken once", async () => {
    await keywordFlow("twice", menuNodes);
    const max = customer(w, "Max");
    await max.text("hello");
    const { contactId, id: conversationId } = await conversationOf(w, max);
    const message = await insertMessage(w.t, { accountId: w.accountId, conversationId, text: "twice" });
    const event = storedEvent({ contactId, conversationId }, message);
    w.sandbox.clearRequests();
    const [a, b] = await Promise.all([
      offerInboundMessage(w.t.app.deps, event),
      offerInboundMessage(w.t.app.deps, event),
    ]);
    expect([a, b].sort()).toEqual(["duplicate", "started"]);
    expect(await offerInboundMessage(w.t.app.deps, event)).toBe("duplicate");
    await w.t.app.deps.jobs.drain();
    expect(sentMessages(w, max.waId)).toHaveLength(1);
  });

  it("contacts do not wait for each other", async () => {
    const flowId = await keywordFlow("crowd", menuNodes);
    const people = Array.from({ length: 6 }, (_, i) => customer(w, `P${i}`));
    await Promise.all(people.map((p) => postWebhook(w, p.textPayload("crowd").payload)));
    await w.t.app.deps.jobs.drain();
    const runs = await runsOf(w, flowId);
    expect(runs).toHaveLength(6);
    expect(runs.every((r) => r.status === "active" && r.current_node_key === "menu")).toBe(true);
  });
});

describe("edits and deletion mid-run", () => {
  beforeEach(resetSandbox);

  it("a reply leading to a node removed by a PUT ends the run failed, naming the node", async () => {
    const flowId = await keywordFlow("edit1", menuNodes);
    const ned = customer(w, "Ned");
    await ned.text("edit1");
    const nodes = await getFlowNodes(w, flowId);
    await putFlow(w, flowId, { nodes: nodes.filter((n) => n.node_key !== "say_b") });
    await ned.button("b");
    const { run, events } = await runFor(w, flowId, ned);
    expect(run).toMatchObject({ status: "failed", end_reason: "node_missing" });
    expect(events.at(-1)).toMatchObject({
      event_type: "error",
      node_key: "say_b",
      payload: { reason: "node_missing", message: 'Node "say_b" does not exist (the flow was edited)' },
    });
    // The contact is free again.
    expect(await activeRunCount(w, run.contact_id)).toBe(0);
  });

  it("a reply to a waiting node that the PUT removed ends the run failed", async () => {
    const flowId = await keywordFlow("edit2", menuNodes);
    const ola = customer(w, "Ola");
    await ola.text("edit2");
    const nodes = await getFlowNodes(w, flowId);
    await putFlow(w, flowId, { nodes: nodes.filter((n) => n.node_key !== "menu") });
    await ola.button("a");
    const { run } = await runFor(w, flowId, ola);
    expect(run).toMatchObject({ status: "failed", end_reason: "node_missing" });
    expect(sentMessages(w, ola.waId)).toHaveLength(1);
  });

  it("a PUT that keeps the node keys lets the run go on with the new texts", async () => {
    const flowId = await keywordFlow("edit3", menuNodes);
    const pia = customer(w, "Pia");
    await pia.text("edit3");
    const nodes = await getFlowNodes(w, flowId);
    await putFlow(w, flowId, {
      nodes: nodes.map((n) =>
        n.node_key === "say_a" ? { ...n, config: { text: "A it is", next_node_key: "done" } } : n,
      ),
    });
    await pia.button("a");
    expect((await runFor(w, flowId, pia)).run.status).toBe("completed");
    expect(sentMessages(w, pia.waId).at(-1)).toMatchObject({ text: { body: "A it is" } });
  });

  it("deleting the flow ends its runs at once and frees the contact for other flows", async () => {
    const flowId = await keywordFlow("del1", menuNodes);
    const other = await keywordFlow("other1", menuNodes);
    const quin = customer(w, "Quin");
    await quin.text("del1");
    const { contactId } = await conversationOf(w, quin);
    expect(await activeRunCount(w, contactId)).toBe(1);

    await deleteFlow(w, flowId);
    expect(await activeRunCount(w, contactId)).toBe(0);
    expect((await api(w, "GET", `/api/flows/${flowId}/runs`)).statusCode).toBe(404);

    // The old run's button is nobody's now; a new keyword starts the other flow.
    await quin.button("a");
    await quin.text("other1");
    expect((await runFor(w, other, quin)).run).toMatchObject({ status: "active", current_node_key: "menu" });
  });

  it("a run whose flow is deleted while a send is in flight stops quietly", async () => {
    const flowId = await keywordFlow("del2", menuNodes);
    const rex = customer(w, "Rex");
    await rex.text("del2");
    const { contactId, id: conversationId } = await conversationOf(w, rex);
    const reply = await insertMessage(w.t, { accountId: w.accountId, conversationId, text: "not a button" });
    // The reprompt's send is slow; the flow is deleted while it is on the wire.
    w.sandbox.inject({ method: "POST", path: /\/messages$/ }, { delayMs: 400 });
    expect(await offerInboundMessage(w.t.app.deps, storedEvent({ contactId, conversationId }, reply))).toBe(
      "advanced",
    );
    await waitFor(() => sentMessages(w, rex.waId).length === 2);
    await deleteFlow(w, flowId);
    await w.t.app.deps.jobs.drain();

    expect(await w.t.database.db.select().from(flowRuns).where(eq(flowRuns.flowId, flowId))).toHaveLength(0);
    expect(
      await w.t.database.db.select().from(flowRunEvents).where(eq(flowRunEvents.flowId, flowId)),
    ).toHaveLength(0);
    expect(await activeRunCount(w, contactId)).toBe(0);
  });

  it("deleting a flow while its runs advance neither deadlocks nor leaves part of an advance", async () => {
    // Several rounds: each races twelve advances against one deletion.
    for (let round = 0; round < 6; round++) {
      const flowId = await keywordFlow(`del3r${round}`, menuNodes);
      const people = Array.from({ length: 12 }, (_, i) => customer(w, `Del${round}-${i}`));
      await Promise.all(people.map((person) => person.text(`del3r${round}`)));
      // Each customer answers the menu with text that is no button: the advance reprompts,
      // writing the run, its events and a bot message, while the flow and its runs are deleted.
      const answers = await Promise.all(
        people.map(async (person) => {
          const { contactId, id: conversationId } = await conversationOf(w, person);
          const reply = await insertMessage(w.t, { accountId: w.accountId, conversationId, text: "neither" });
          return storedEvent({ contactId, conversationId }, reply);
        }),
      );
      const offers = answers.map((event) => offerInboundMessage(w.t.app.deps, event));
      // The deletion starts once the advances are under way.
      await new Promise((resolve) => setTimeout(resolve, round));
      const [outcomes, deleted] = await Promise.all([
        Promise.allSettled(offers),
        api(w, "DELETE", `/api/flows/${flowId}`),
      ]);
      // A deadlock would have failed one side (PostgreSQL aborts one of the two after a second).
      expect(deleted.statusCode).toBe(200);
      for (const outcome of outcomes) {
        expect(outcome.status).toBe("fulfilled");
        // no_trigger: the flow was gone when the runner first looked.
        expect(["advanced", "run_gone", "no_trigger"]).toContain(
          (outcome as PromiseFulfilledResult<string>).value,
        );
      }
      await w.t.app.deps.jobs.drain();
      expect(await w.t.database.db.select().from(flowRuns).where(eq(flowRuns.flowId, flowId))).toHaveLength(
        0,
      );
      expect(
        await w.t.database.db.select().from(flowRunEvents).where(eq(flowRunEvents.flowId, flowId)),
      ).toHaveLength(0);
    }
    // No bot message is left pending: each reprompt was sent, or its send found the run gone.
    const pending = (await w.t.database.db.select().from(messages)).filter(
      (m) => m.senderType === "bot" && m.status === "pending",
    );
    expect(pending).toHaveLength(0);
  });
});

describe("upstream failures", () => {
  beforeEach(resetSandbox);

  it("a failed send ends the run failed with the upstream error, and the dispatcher goes on", async () => {
    const flowId = await keywordFlow("fail1", menuNodes);
    const sam = customer(w, "Sam");
    w.sandbox.inject(
      { method: "POST", path: /\/messages$/ },
      { status: 400, error: { code: 131026, message: "Message undeliverable" } },
    );
    await sam.text("fail1");
    const { run, events } = await runFor(w, flowId, sam);
    expect(run).toMatchObject({ status: "failed", end_reason: "send_failed", current_node_key: "menu" });
    const error = events.at(-1)!;
    expect(error).toMatchObject({
      event_type: "error",
      node_key: "menu",
      payload: { reason: "send_failed", message: "Message undeliverable", upstream: { code: 131026 } },
    });
    const bot = (await conversationOf(w, sam)).messages.filter((m) => m.sender_type === "bot");
    expect(bot).toHaveLength(1);
    expect(bot[0]).toMatchObject({ status: "failed", message_id: null });
    expect(JSON.stringify(events)).not.toContain(w.accessToken);

    // The fault was one-off: the next customer is served.
    const tom = customer(w, "Tom");
    await tom.text("fail1");
    expect((await runFor(w, flowId, tom)).run.status).toBe("active");
  });

  it("a connection dropped after the request went out is an unknown outcome: never sent again at once, sent once more after the window when no status names it", async () => {
    const flowId = await keywordFlow("fail2", menuNodes);
    const uma = customer(w, "Uma");
    w.sandbox.inject({ method: "POST", path: /\/messages$/ }, { drop: true });
    await uma.text("fail2");
    expect(sentMessages(w, uma.waId)).toHaveLength(1);
    let bot = (await conversationOf(w, uma)).messages.filter((m) => m.sender_type === "bot");
    expect(bot.map((m) => m.status)).toEqual(["pending"]);
    expect((await runFor(w, flowId, uma)).run).toMatchObject({ status: "active", current_node_key: "menu" });
    // The window (SEND_UNKNOWN_WINDOW_S) ends: its settle job is due.
    await w.t.database.pool.query(
      "update graphile_worker._private_jobs set run_at = now() where locked_at is null",
    );
    await w.t.app.deps.jobs.drain();
    const sends = sentMessages(w, uma.waId);
    expect(sends).toHaveLength(2);
    expect(sends.map((b) => b.biz_opaque_callback_data)).toEqual([bot[0]?.id, bot[0]?.id]);
    bot = (await conversationOf(w, uma)).messages.filter((m) => m.sender_type === "bot");
    expect(bot).toMatchObject([{ status: "sent", message_id: expect.stringMatching(/^wamid\./) }]);
  });

  it("a send Meta took whose answer was lost is recorded sent when Meta's status names it, and never sent again", async () => {
    const flowId = await keywordFlow("fail3", menuNodes);
    const ida = customer(w, "Ida");
    w.sandbox.inject({ method: "POST", path: /\/messages$/ }, { dropAfterAccept: true });
    await ida.text("fail3");
    const [sent] = sentMessages(w, ida.waId);
    const [bot] = (await conversationOf(w, ida)).messages.filter((m) => m.sender_type === "bot");
    expect(bot).toMatchObject({ status: "pending", message_id: null });
    expect(sent?.biz_opaque_callback_data).toBe(bot?.id);
    // Meta's status webhook, echoing our id as biz_opaque_callback_data.
    const upstreamId = "wamid.HBgLMTY1MDU1NTEyMzQVAgARGBI5QUVCMjBEQUQ5NEY0RkNCOTQA";
    await postWebhook(
      w,
      statusPayload({
        phoneNumberId: w.phoneNumberId,
        messageId: upstreamId,
        recipientId: ida.waId,
        status: "delivered",
        callbackData: bot?.id as string,
      }).payload,
    );
    await w.t.app.deps.jobs.drain();
    const after = (await conversationOf(w, ida)).messages.filter((m) => m.sender_type === "bot");
    expect(after).toMatchObject([{ id: bot?.id, status: "delivered", message_id: upstreamId }]);
    // The run went on as if the answer had come (the menu waits for its reply).
    const { run } = await runFor(w, flowId, ida);
    expect(run).toMatchObject({ status: "active", current_node_key: "menu" });
    await w.t.database.pool.query(
      "update graphile_worker._private_jobs set run_at = now() where locked_at is null",
    );
    await w.t.app.deps.jobs.drain();
    expect(sentMessages(w, ida.waId)).toHaveLength(1);
  });
});

describe("step cap", () => {
  beforeEach(resetSandbox);

  it(`a 500-node linear flow stops at ${MAX_STEPS_PER_ADVANCE} steps and fails with step_limit`, async () => {
    const nodes = [
      { node_key: "start", node_type: "start", config: { next_node_key: "n1" } },
      ...Array.from({ length: 498 }, (_, i) => ({
        node_key: `n${i + 1}`,
        node_type: "send_message",
        config: { text: `Line ${i + 1}`, next_node_key: i + 1 === 498 ? "done" : `n${i + 2}` },
      })),
      { node_key: "done", node_type: "end", config: {} },
    ];
    expect(nodes).toHaveLength(500);
    const flowId = await keywordFlow("long", nodes);
    const vic = customer(w, "Vic");
    await vic.text("long");
    const { run, events } = await runFor(w, flowId, vic);
    // Step 1 is the start node; steps 2-64 send n1..n63; entering n64 would be step 65.
    const sent = sentMessages(w, vic.waId);
    expect(sent).toHaveLength(MAX_STEPS_PER_ADVANCE - 1);
    expect(sent.at(-1)).toMatchObject({ text: { body: "Line 63" } });
    expect(run).toMatchObject({ status: "failed", end_reason: "step_limit", current_node_key: "n63" });
    expect(events.filter((e) => e.event_type === "node_entered")).toHaveLength(MAX_STEPS_PER_ADVANCE);
    expect(events.at(-1)).toMatchObject({
      event_type: "error",
      node_key: "n64",
      payload: { reason: "step_limit" },
    });
  });

  it("a loop between two nodes ends at the cap instead of spinning", async () => {
    const flowId = await keywordFlow("loop", [
      { node_key: "start", node_type: "start", config: { next_node_key: "tag" } },
      {
        node_key: "tag",
        node_type: "set_tag",
        config: { mode: "add", tag: "looped", next_node_key: "check" },
      },
      {
        node_key: "check",
        node_type: "condition",
        config: {
          subject: "tag",
          subject_key: "looped",
          operator: "present",
          true_next: "tag",
          false_next: "start",
        },
      },
    ]);
    const wes = customer(w, "Wes");
    await wes.text("loop");
    expect((await runFor(w, flowId, wes)).run).toMatchObject({ status: "failed", end_reason: "step_limit" });
  });
});

describe("agent replies", () => {
  beforeEach(resetSandbox);

  it("an agent writing to the customer ends the run (ended_by_agent); the customer's tap goes to the agent", async () => {
    const flowId = await keywordFlow("agent1", menuNodes);
    const xia = customer(w, "Xia");
    await xia.text("agent1");
    const { id } = await conversationOf(w, xia);
    const sent = await api(w, "POST", `/api/conversations/${id}/messages`, { text: "Hi, an agent here" });
    expect(sent.statusCode).toBe(201);
    expect((await runFor(w, flowId, xia)).run).toMatchObject({
      status: "completed",
      end_reason: "ended_by_agent",
    });
    const before = sentMessages(w, xia.waId).length;
    await xia.button("b");
    expect(sentMessages(w, xia.waId)).toHaveLength(before);
  });
});

async function waitFor(condition: () => boolean, timeoutMs = 3000) {
  const started = Date.now();
  while (!condition()) {
    if (Date.now() - started > timeoutMs) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 10));
  }
}
