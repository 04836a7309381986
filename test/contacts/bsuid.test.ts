import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inboundTextPayload } from "../../src/upstream/sandbox/webhook-payloads.js";
import {
  activeFlow,
  createWorld,
  type Json,
  postWebhook,
  sentMessages,
  type World,
} from "../flows/runner/helpers.js";

let w: World;
beforeAll(async () => {
  w = await createWorld();
});
afterAll(() => w.close());

const api = (method: "GET" | "POST", url: string, payload?: unknown) =>
  w.t.app.inject({
    method,
    url,
    headers: w.owner.headers,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });

const write = async (from: string, text: string, extra: { username?: string } = {}) => {
  await postWebhook(
    w,
    inboundTextPayload({ phoneNumberId: w.phoneNumberId, from, name: "Ada", text, ...extra }).payload,
  );
  await w.t.app.deps.jobs.drain();
};

const contactsNamed = async (q: string): Promise<Json[]> =>
  (await api("GET", `/api/contacts?q=${encodeURIComponent(q)}`)).json().contacts;

describe("customers who hide their number behind a username (BSUID)", () => {
  it("stores their message, answers them by BSUID (agent and bot), and threads a later message with a phone into them", async () => {
    const bsuid = "US.13491208655302741918";
    // A bot that greets new customers: it must reach a customer without a phone too.
    await activeFlow(w, {
      trigger_type: "first_inbound_message",
      nodes: [
        { node_key: "start", node_type: "start", config: { next_node_key: "hi" } },
        { node_key: "hi", node_type: "send_message", config: { text: "Hello from the bot" } },
      ],
    });
    await write(bsuid, "Hi, I am hiding my number", { username: "ada.k" });

    const [contact] = await contactsNamed("ada.k");
    expect(contact).toMatchObject({ bsuid, username: "ada.k", phone: null, name: "Ada" });
    const messages = (await api("GET", `/api/conversations/${contact.conversation_id}/messages`)).json()
      .messages;
    expect(messages.map((m: Json) => m.text)).toEqual(["Hi, I am hiding my number", "Hello from the bot"]);

    const reply = await api("POST", `/api/conversations/${contact.conversation_id}/messages`, {
      text: "Hello Ada",
    });
    expect(reply.statusCode, reply.body).toBe(201);
    const sent = sentMessages(w).filter((b) => b.recipient === bsuid);
    expect(sent.map((b) => b.text?.body)).toEqual(["Hello from the bot", "Hello Ada"]);
    expect(sent.every((b) => b.to === undefined)).toBe(true);

    // The same customer later writes with their number shown: same contact, which gains the phone.
    const payload = inboundTextPayload({
      phoneNumberId: w.phoneNumberId,
      from: "14155550177",
      name: "Ada",
      text: "Now with my number",
    });
    const value = (payload.payload as Json).entry[0].changes[0].value;
    value.contacts[0].user_id = bsuid;
    value.messages[0].from_user_id = bsuid;
    await postWebhook(w, payload.payload);
    await w.t.app.deps.jobs.drain();
    const all = (await api("GET", "/api/contacts")).json().contacts as Json[];
    expect(all).toHaveLength(1);
    expect(all[0]).toMatchObject({ id: contact.id, bsuid, phone: "14155550177", username: "ada.k" });
  });
});
