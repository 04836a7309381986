import { randomUUID } from "node:crypto";
import { and, eq } from "drizzle-orm";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  accountEvents,
  contacts,
  conversations,
  flowRunEvents,
  flowRuns,
  messages,
  messagingConfigs,
} from "../../../src/db/schema/index.js";
import { RunBusy, withContactLock, writeRun } from "../../../src/flows/runner/store.js";
import {
  activeFlow,
  activeRunCount,
  conversationOf,
  createWorld,
  customer,
  ORDER_QUESTION,
  putFlow,
  questionRecorded,
  runFor,
  sentMessages,
  type World,
} from "./helpers.js";

/**
 * A bot message is stored with its run's write, in the advance's last
 * statement (src/flows/runner/store.ts, RunWrites.alongside), and its
 * number's slot is asked for while that statement and the commit run: at
 * once when the customer's message told the number's rate, else from what
 * the statement read. A run a message starts is inserted by that statement
 * too, as the walk left it, from its flow's nodes kept between advances by
 * the version of the flow's row (src/flows/runner/nodes-cache.ts).
 */

let w: World;
const hints: Array<[string, number]> = [];

beforeAll(async () => {
  w = await createWorld();
  await w.t.database.db
    .update(messagingConfigs)
    .set({ messagesPerSecond: 7 })
    .where(eq(messagingConfigs.accountId, w.accountId));
  const sends = w.t.app.deps.sends;
  const expectSend = sends.expect.bind(sends);
  sends.expect = (phoneNumberId, limit) => {
    hints.push([phoneNumberId, limit]);
    expectSend(phoneNumberId, limit);
  };
});
afterAll(() => w.close());

describe("a bot message written with its run", () => {
  it("each message of a two-message flow is stored once, sent once in order, and its slot asked for at the number's rate", async () => {
    const flowId = await activeFlow(w, {
      trigger_config: { keywords: ["twice"], match_type: "exact" },
      nodes: [
        { node_key: "start", node_type: "start", config: { next_node_key: "one" } },
        { node_key: "one", node_type: "send_message", config: { text: "First", next_node_key: "two" } },
        { node_key: "two", node_type: "send_message", config: { text: "Second", next_node_key: "done" } },
        { node_key: "done", node_type: "end", config: {} },
      ],
    });
    const ada = customer(w);
    hints.length = 0;
    await ada.text("twice");

    // The second goes out once Meta has answered the first (its advance has no customer message).
    await vi.waitFor(
      async () => {
        expect((await runFor(w, flowId, ada)).run.status).toBe("completed");
      },
      { timeout: 5000, interval: 50 },
    );
    expect(sentMessages(w, ada.waId).map((m) => m.text?.body)).toEqual(["First", "Second"]);
    // The first slot was asked for from the customer's message, the second from its statement.
    expect(hints).toEqual([
      [w.phoneNumberId, 7],
      [w.phoneNumberId, 7],
    ]);

    const { id: conversationId } = await conversationOf(w, ada);
    const [conversation] = await w.t.database.db
      .select()
      .from(conversations)
      .where(eq(conversations.id, conversationId));
    const stored = await w.t.database.db
      .select()
      .from(messages)
      .where(and(eq(messages.conversationId, conversationId), eq(messages.direction, "outbound")))
      .orderBy(messages.createdAt);
    expect(stored.map((m) => [m.text, m.senderType, m.status])).toEqual([
      ["First", "bot", "sent"],
      ["Second", "bot", "sent"],
    ]);
    // Each is one message.sent event, and the conversation shows the last of them.
    const sentEvents = await w.t.database.db
      .select()
      .from(accountEvents)
      .where(and(eq(accountEvents.accountId, w.accountId), eq(accountEvents.type, "message.sent")));
    const ours = sentEvents.filter((e) => stored.some((m) => (e.data as { id?: string }).id === m.id));
    expect(ours).toHaveLength(2);
    expect(conversation?.lastMessageAt?.getTime()).toBe(stored[1]?.createdAt.getTime());
  });
});

describe("a run started by a customer's message", () => {
  const greeting = (text: string) => [
    { node_key: "start", node_type: "start", config: { next_node_key: "greet" } },
    { node_key: "greet", node_type: "send_message", config: { text, next_node_key: "done" } },
    { node_key: "done", node_type: "end", config: {} },
  ];
  /** An active flow that a keyword starts and that greets with `text`. */
  const greeter = (keyword: string, text: string) =>
    activeFlow(w, { trigger_config: { keywords: [keyword], match_type: "exact" }, nodes: greeting(text) });

  it("follows every edit of its flow: a PUT between two customers' triggers is what the second gets", async () => {
    const flowId = await greeter("edited", "Old words");
    const first = customer(w, "Ann");
    await first.text("edited");
    const second = customer(w, "Bea");
    await second.text("edited");
    await putFlow(w, flowId, { entry_node_id: "start", nodes: greeting("New words") });
    const third = customer(w, "Cy");
    await third.text("edited");
    // A PUT that changes only the flow's name changes no node: the texts stay the new ones.
    await putFlow(w, flowId, { name: "Renamed greeter" });
    const fourth = customer(w, "Di");
    await fourth.text("edited");

    await vi.waitFor(() => expect(sentMessages(w, fourth.waId)).toHaveLength(1), { timeout: 5000 });
    const texts = [first, second, third, fourth].map((who) => sentMessages(w, who.waId)[0]?.text?.body);
    expect(texts).toEqual(["Old words", "Old words", "New words", "New words"]);
  });

  it("follows an edit made while it waits: the advances after the PUT walk the new nodes", async () => {
    const survey = (bye: string) => [
      { node_key: "start", node_type: "start", config: { next_node_key: "ask" } },
      {
        node_key: "ask",
        node_type: "collect_input",
        config: { prompt_text: "Your name?", var_key: "name", next_node_key: "thanks" },
      },
      { node_key: "thanks", node_type: "send_message", config: { text: "Thanks", next_node_key: "bye" } },
      { node_key: "bye", node_type: "send_message", config: { text: bye, next_node_key: "done" } },
      { node_key: "done", node_type: "end", config: {} },
    ];
    const flowId = await activeFlow(w, {
      trigger_config: { keywords: ["survey"], match_type: "exact" },
      nodes: survey("Old goodbye"),
    });
    const fay = customer(w, "Fay");
    await fay.text("survey");
    await questionRecorded(w, fay);
    await putFlow(w, flowId, { nodes: survey("New goodbye") });
    await fay.text("Fay");

    // "Thanks" goes out from the answer's advance; the goodbye from the advance after Meta's
    // answer to it: both after the PUT, so both from its nodes.
    await vi.waitFor(() => expect(sentMessages(w, fay.waId)).toHaveLength(3), { timeout: 5000 });
    expect(sentMessages(w, fay.waId).map((m) => m.text?.body ?? m.interactive ?? m.type)).toEqual([
      "Your name?",
      "Thanks",
      "New goodbye",
    ]);
    await vi.waitFor(async () => expect((await runFor(w, flowId, fay)).run.status).toBe("completed"), {
      timeout: 5000,
    });
  });

  it("is shown once in the account's events, as its first advance left it", async () => {
    const flowId = await greeter("once", "Hello once");
    const eve = customer(w, "Eve");
    await eve.text("once");
    await vi.waitFor(async () => expect((await runFor(w, flowId, eve)).run.status).toBe("completed"), {
      timeout: 5000,
    });
    const { run } = await runFor(w, flowId, eve);
    const updates = await w.t.database.db
      .select()
      .from(accountEvents)
      .where(and(eq(accountEvents.accountId, w.accountId), eq(accountEvents.type, "flow_run.updated")))
      .orderBy(accountEvents.seq);
    const ours = updates
      .filter((e) => (e.data as { id?: string }).id === run.id)
      .map((e) => e.data as { status: string; current_node_key: string });
    // The trigger's advance (waiting for its message to go out), then the send's (to the end).
    expect(ours.map((e) => [e.status, e.current_node_key])).toEqual([
      ["active", "greet"],
      ["completed", "done"],
    ]);
  });
});

describe("the run's write sent with the commit", () => {
  it("fails as a whole when the run it inserts cannot be: RunBusy, and nothing of the transaction stays", async () => {
    const flowId = await activeFlow(w, {
      trigger_config: { keywords: ["busy"], match_type: "exact" },
      nodes: ORDER_QUESTION,
    });
    const gus = customer(w, "Gus");
    await gus.text("busy");
    await vi.waitFor(async () => expect((await runFor(w, flowId, gus)).run.status).toBe("active"), {
      timeout: 5000,
    });
    const { contactId } = await conversationOf(w, gus);
    const [active] = await w.t.database.db.select().from(flowRuns).where(eq(flowRuns.contactId, contactId));
    const now = new Date();
    // A second active run of the same contact, as only a writer outside the contact's lock could try.
    const second = { ...active!, id: randomUUID(), startedAt: now, lastActivityAt: now };
    const failed = await withContactLock(
      w.t.app.deps.pool,
      { accountId: w.accountId, contactId },
      async (db) => {
        await db
          .update(contacts)
          .set({ name: "Renamed in the failed transaction" })
          .where(eq(contacts.id, contactId));
        await writeRun(
          db,
          second.id,
          { insert: second, patch: {}, events: [{ type: "started", nodeKey: null, payload: {}, at: now }] },
          { last: true },
        );
      },
    ).catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(RunBusy);
    const [contact] = await w.t.database.db.select().from(contacts).where(eq(contacts.id, contactId));
    expect(contact!.name).toBe("Gus");
    expect(await activeRunCount(w, contactId)).toBe(1);
    const events = await w.t.database.db
      .select()
      .from(flowRunEvents)
      .where(eq(flowRunEvents.runId, second.id));
    expect(events).toEqual([]);
  });
});

describe("an answer to a run's question", () => {
  it("is advanced in one transaction of four statements: the opening, the take, the run's write and the commit", async () => {
    const flowId = await activeFlow(w, {
      trigger_config: { keywords: ["answer"], match_type: "exact" },
      nodes: ORDER_QUESTION,
    });
    const hal = customer(w, "Hal");
    await hal.text("answer");
    await questionRecorded(w, hal);

    // Every statement of every connection the pool lends while the answer is taken.
    const pool = w.t.app.deps.pool;
    const lent: string[][] = [];
    const connect = pool.connect.bind(pool) as (...args: unknown[]) => unknown;
    const record = (client: pg.PoolClient) => {
      const statements: string[] = [];
      lent.push(statements);
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      const release = client.release.bind(client);
      Object.assign(client, {
        query: (first: unknown, ...rest: unknown[]) => {
          statements.push(typeof first === "string" ? first : String((first as { text?: string }).text));
          return query(first, ...rest);
        },
        release: (...args: unknown[]) => {
          Object.assign(client, { query, release });
          return (release as (...a: unknown[]) => void)(...args);
        },
      });
      return client;
    };
    // pg's own pool.query lends with a callback: those connections are left as they are.
    Object.assign(pool, {
      connect: (...args: unknown[]) =>
        args.length ? connect(...args) : (connect() as Promise<pg.PoolClient>).then(record),
    });
    try {
      await hal.text("4711");
    } finally {
      Object.assign(pool, { connect });
    }

    const { run } = await runFor(w, flowId, hal);
    expect([run.status, run.vars]).toEqual(["completed", { order: "4711" }]);
    const advance = lent.filter((statements) => statements[0]?.includes("pg_advisory_xact_lock"));
    expect(advance).toHaveLength(1);
    expect(advance[0]).toHaveLength(4);
    expect(advance[0]?.[1]).toContain("flow_message_receipts");
    expect(advance[0]?.[2]).toContain("flow_run_events");
    expect(advance[0]?.[3]).toBe("commit");
  });
});
