import { eq } from "drizzle-orm";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { conversations } from "../../../src/db/schema/index.js";
import {
  activeTemplate,
  conversationOf,
  createWorld,
  customer,
  executionCount,
  type Json,
  postWebhook,
  putFlow,
  runFor,
  runsOf,
  sentMessages,
  type World,
} from "./helpers.js";

let w: World;
let welcome: string;
let faq: string;
let lead: string;

beforeAll(async () => {
  w = await createWorld();
  welcome = await activeTemplate(w, "welcome_menu");
  faq = await activeTemplate(w, "faq_bot");
  lead = await activeTemplate(w, "lead_capture");
});
afterAll(() => w.close());
beforeEach(() => w.sandbox.clearRequests());

const handoffNote = async (conversationId: string) => {
  const [row] = await w.t.database.db
    .select()
    .from(conversations)
    .where(eq(conversations.id, conversationId));
  return row!.handoffNote;
};
const types = (events: Array<{ event_type: string }>) => events.map((e) => e.event_type);

describe("welcome_menu", () => {
  it("answers a keyword with the menu and hands the chosen topic to an agent", async () => {
    const ada = customer(w, "Ada");
    // First message: lead_capture (first_inbound_message) is younger than the keyword flows,
    // so the oldest matching flow wins: the welcome menu.
    await ada.text("Hi, I need some help");
    const [menu] = sentMessages(w, ada.waId);
    expect(menu).toMatchObject({
      messaging_product: "whatsapp",
      to: ada.waId,
      type: "interactive",
      interactive: {
        type: "button",
        header: { type: "text", text: "Hello there!" },
        body: { text: "Thanks for getting in touch, Ada. What can we help you with today?" },
      },
    });
    expect(menu!.interactive.action.buttons.map((b: Json) => b.reply.id)).toEqual([
      "topic_order",
      "topic_billing",
      "topic_other",
    ]);

    let { run } = await runFor(w, welcome, ada);
    expect(run).toMatchObject({ status: "active", current_node_key: "menu" });

    await ada.button("topic_billing", "Billing");
    const detail = await runFor(w, welcome, ada);
    run = detail.run;
    expect(run).toMatchObject({ status: "handed_off", end_reason: "handoff_node" });
    expect(types(detail.events)).toEqual([
      "started",
      "node_entered",
      "node_entered",
      "message_sent",
      "reply_received",
      "node_entered",
      "handoff",
    ]);
    expect(detail.events[4]).toMatchObject({ node_key: "menu", payload: { reply_id: "topic_billing" } });

    const conversation = await conversationOf(w, ada);
    expect(conversation.status).toBe("pending");
    expect(await handoffNote(conversation.id)).toBe("Customer asked about billing (welcome menu).");
    const bot = conversation.messages.filter((m) => m.sender_type === "bot");
    expect(bot).toHaveLength(1);
    expect(bot[0]).toMatchObject({ type: "interactive", status: "sent", direction: "outbound" });
    expect(bot[0]!.message_id).toMatch(/^wamid\./);
    expect(await executionCount(w, welcome)).toBe(1);
  });

  it("matches keywords as whole words: 'this' does not say hi", async () => {
    const bob = customer(w, "Bob");
    await bob.text("Hello, I want to order something");
    await w.t.app.deps.jobs.drain();
    // lead_capture took the first message; finish it off so the contact is free again.
    expect((await runFor(w, lead, bob)).run.status).toBe("active");
    await bob.text("Bob");
    await bob.text("bob@example.com");
    await bob.text("Bob Inc");
    expect((await runFor(w, lead, bob)).run.status).toBe("handed_off");
    w.sandbox.clearRequests();

    await bob.text("this is it");
    expect(sentMessages(w, bob.waId)).toHaveLength(0);
    await bob.text("HELP");
    expect(sentMessages(w, bob.waId)).toHaveLength(1);
  });

  it("reprompts twice on unknown replies, then hands off (default policy)", async () => {
    const cy = customer(w, "Cy");
    await cy.text("support please");
    await cy.text("what?");
    await cy.button("no_such_button");
    expect(sentMessages(w, cy.waId)).toHaveLength(3);
    expect((await runFor(w, welcome, cy)).run).toMatchObject({ status: "active", reprompt_count: 2 });

    await cy.text("still confused");
    const { run, events } = await runFor(w, welcome, cy);
    expect(run).toMatchObject({ status: "handed_off", end_reason: "reprompts_exhausted" });
    const fallbacks = events.filter((e) => e.event_type === "fallback_fired").map((e) => e.payload.action);
    expect(fallbacks).toEqual(["reprompt", "reprompt", "handoff"]);
    expect(sentMessages(w, cy.waId)).toHaveLength(3);
    const conversation = await conversationOf(w, cy);
    expect(conversation.status).toBe("pending");
    expect(await handoffNote(conversation.id)).toContain("no valid answer after 2 reprompts");
  });
});

describe("faq_bot", () => {
  it("sends the topics list, answers the chosen topic and completes", async () => {
    const dee = customer(w, "Dee");
    await dee.text("A question about delivery");
    const [list] = sentMessages(w, dee.waId);
    expect(list).toMatchObject({
      type: "interactive",
      interactive: {
        type: "list",
        body: { text: "Hi Dee! Choose a topic and we will answer straight away." },
        action: { button: "See topics" },
      },
    });
    expect(list!.interactive.action.sections[0].rows[1]).toMatchObject({
      id: "faq_delivery",
      title: "Delivery times",
    });

    await dee.list("faq_delivery", "Delivery times");
    const sent = sentMessages(w, dee.waId);
    expect(sent).toHaveLength(2);
    expect(sent[1]).toMatchObject({
      type: "text",
      text: { body: expect.stringContaining("Standard delivery") },
    });
    const { run, events } = await runFor(w, faq, dee);
    expect(run).toMatchObject({ status: "completed", end_reason: "end_node", current_node_key: "done" });
    expect(types(events).at(-1)).toBe("completed");
    expect((await conversationOf(w, dee)).status).toBe("open");
  });

  it("with on_unknown_reply handoff, an unknown reply hands off at once", async () => {
    await putFlow(w, faq, { fallback_policy: { on_unknown_reply: "handoff" } });
    try {
      const eve = customer(w, "Eve");
      await eve.text("info");
      await eve.text("I just want a human");
      const { run } = await runFor(w, faq, eve);
      expect(run).toMatchObject({ status: "handed_off", end_reason: "unknown_reply" });
      expect((await conversationOf(w, eve)).status).toBe("pending");
      expect(sentMessages(w, eve.waId)).toHaveLength(1);
    } finally {
      await putFlow(w, faq, { fallback_policy: {} });
    }
  });

  it("with on_unknown_reply ignore, the run keeps waiting and the message is left to agents", async () => {
    await putFlow(w, faq, { fallback_policy: { on_unknown_reply: "ignore" } });
    try {
      const fay = customer(w, "Fay");
      await fay.text("faq");
      await fay.text("hmm, let me talk to someone");
      let detail = await runFor(w, faq, fay);
      expect(detail.run).toMatchObject({ status: "active", current_node_key: "topics", reprompt_count: 0 });
      expect(detail.events.at(-1)).toMatchObject({
        event_type: "fallback_fired",
        payload: { action: "ignore" },
      });
      expect(sentMessages(w, fay.waId)).toHaveLength(1);
      expect((await conversationOf(w, fay)).status).toBe("open");

      await fay.list("faq_returns", "Returns");
      detail = await runFor(w, faq, fay);
      expect(detail.run.status).toBe("completed");
    } finally {
      await putFlow(w, faq, { fallback_policy: {} });
    }
  });

  it("with max_reprompts 0 and on_exhaust end, the first unknown reply ends the run", async () => {
    await putFlow(w, faq, { fallback_policy: { max_reprompts: 0, on_exhaust: "end" } });
    try {
      const gus = customer(w, "Gus");
      await gus.text("faq");
      await gus.text("?");
      const { run } = await runFor(w, faq, gus);
      expect(run).toMatchObject({ status: "completed", end_reason: "reprompts_exhausted" });
      expect((await conversationOf(w, gus)).status).toBe("open");
    } finally {
      await putFlow(w, faq, { fallback_policy: {} });
    }
  });
});

describe("lead_capture", () => {
  it("asks name, email and company on the first message, then hands off with the answers", async () => {
    const hal = customer(w, "Hal");
    await hal.text("Good morning");
    expect(sentMessages(w, hal.waId).map((m) => m.text.body)).toEqual([
      "Welcome! Before we connect you with our team, we have three quick questions.",
      "What is your name?",
    ]);
    await hal.text("  Hal Jordan  ");
    await hal.text("not an email");
    await hal.text("hal@example.com");
    await hal.text("Ferris Air");
    const bodies = sentMessages(w, hal.waId).map((m) => m.text.body);
    expect(bodies.slice(2)).toEqual([
      "Nice to meet you, Hal Jordan. Which email address can we reach you at?",
      "Nice to meet you, Hal Jordan. Which email address can we reach you at?",
      "And which company do you work for?",
      "Thank you, Hal Jordan! Someone from our sales team will reply here shortly.",
    ]);
    const { run, events } = await runFor(w, lead, hal);
    expect(run).toMatchObject({
      status: "handed_off",
      vars: { name: "Hal Jordan", email: "hal@example.com", company: "Ferris Air" },
    });
    expect(events.filter((e) => e.event_type === "fallback_fired")).toHaveLength(1);
    const conversation = await conversationOf(w, hal);
    expect(await handoffNote(conversation.id)).toBe(
      `New lead: Hal Jordan <hal@example.com> from Ferris Air, phone ${hal.waId}.`,
    );
    // Every bot message is in the inbox, in order, after the customer's message it answers.
    const senders = conversation.messages.map((m) => m.sender_type);
    expect(senders).toEqual([
      "customer",
      "bot",
      "bot",
      "customer",
      "bot",
      "customer",
      "bot",
      "customer",
      "bot",
      "customer",
      "bot",
    ]);
  });

  it("does not start on a later message of a known conversation", async () => {
    const ivy = customer(w, "Ivy");
    await ivy.text("hello");
    await ivy.text("Ivy");
    await ivy.text("ivy@example.com");
    await ivy.text("Ivy Ltd");
    await ivy.text("one more thing");
    const conversationId = (await conversationOf(w, ivy)).id;
    expect((await runsOf(w, lead)).filter((r) => r.conversation_id === conversationId)).toHaveLength(1);
  });
});

describe("duplicate deliveries", () => {
  it("a webhook delivered twice starts one run and sends one menu", async () => {
    const jo = customer(w, "Jo");
    const first = jo.textPayload("help");
    await jo.text("hello there"); // takes lead_capture out of the picture: not a first message
    const conversationId = (await conversationOf(w, jo)).id;
    const leadRun = (await runsOf(w, lead)).find((r) => r.conversation_id === conversationId)!;
    expect(leadRun.status).toBe("active");
    // End the lead run so that the keyword can start the welcome menu.
    await jo.text("Jo");
    await jo.text("jo@example.com");
    await jo.text("Jo Co");
    w.sandbox.clearRequests();

    await postWebhook(w, first.payload);
    await postWebhook(w, first.payload);
    await w.t.app.deps.jobs.drain();
    expect(sentMessages(w, jo.waId)).toHaveLength(1);
    expect((await runsOf(w, welcome)).filter((r) => r.conversation_id === conversationId)).toHaveLength(1);
  });
});
