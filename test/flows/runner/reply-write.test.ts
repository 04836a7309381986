import { and, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { accountEvents, conversations, messages, messagingConfigs } from "../../../src/db/schema/index.js";
import {
  activeFlow,
  conversationOf,
  createWorld,
  customer,
  runFor,
  sentMessages,
  type World,
} from "./helpers.js";

/**
 * A bot message is stored with its run's write, in the advance's last
 * statement (src/flows/runner/store.ts, RunWrites.alongside), and its
 * number's slot is asked for while that statement and the commit run: at
 * once when the customer's message told the number's rate, else from what
 * the statement read.
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
