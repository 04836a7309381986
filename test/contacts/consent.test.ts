import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  activeFlow,
  createWorld,
  customer,
  type Json,
  sentMessages,
  type World,
} from "../flows/runner/helpers.js";

let w: World;
beforeAll(async () => {
  w = await createWorld();
  // A flow that answers any first message: a keyword must not start it.
  await activeFlow(w, {
    trigger_type: "first_inbound_message",
    nodes: [
      { node_key: "start", node_type: "start", config: { next_node_key: "hi" } },
      { node_key: "hi", node_type: "send_message", config: { text: "Welcome from the bot" } },
    ],
  });
});
afterAll(() => w.close());

const api = (method: "GET" | "PATCH" | "POST", url: string, payload?: unknown) =>
  w.t.app.inject({
    method,
    url,
    headers: w.owner.headers,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });

async function contactOf(waId: string): Promise<Json> {
  const listed = await api("GET", `/api/contacts?q=${waId}`);
  return listed.json().contacts[0];
}

describe("consent keywords", () => {
  it("opts out on STOP (any case, trimmed), answers with opt_out_reply, starts no flow, and opts back in on START", async () => {
    expect(
      (
        await api("PATCH", "/api/settings", {
          opt_out_reply: "You will get no more messages. Send START to undo.",
        })
      ).statusCode,
    ).toBe(200);
    const ada = customer(w, "Ada");
    await ada.text("  stop ");
    let contact = await contactOf(ada.waId);
    expect(contact).toMatchObject({ opted_out: true, opted_out_at: expect.any(String) });
    const sent = sentMessages(w, ada.waId).map((b) => b.text?.body);
    expect(sent).toEqual(["You will get no more messages. Send START to undo."]);

    // An agent's message to the opted-out contact is refused.
    const refused = await api("POST", `/api/conversations/${contact.conversation_id}/messages`, {
      text: "Hi",
    });
    expect(refused.statusCode).toBe(422);
    expect(refused.json().code).toBe("opted_out");

    // A second STOP changes nothing and is not answered again.
    await ada.text("STOP");
    expect(sentMessages(w, ada.waId)).toHaveLength(1);

    await ada.text("Start");
    contact = await contactOf(ada.waId);
    expect(contact).toMatchObject({ opted_out: false, opted_out_at: null, opted_in_at: expect.any(String) });
    // Still no flow: START is a keyword too.
    expect(sentMessages(w, ada.waId)).toHaveLength(1);
    const agent = await api("POST", `/api/conversations/${contact.conversation_id}/messages`, {
      text: "Welcome back",
    });
    expect(agent.statusCode).toBe(201);
  });

  it("uses the account's own keywords, and a text that only contains one is an ordinary message", async () => {
    expect(
      (await api("PATCH", "/api/settings", { opt_out_keywords: ["PARAR"], opt_out_reply: null })).statusCode,
    ).toBe(200);
    const bea = customer(w, "Bea");
    await bea.text("please stop sending me offers");
    expect((await contactOf(bea.waId)).opted_out).toBe(false);
    expect(sentMessages(w, bea.waId).map((b) => b.text?.body)).toEqual(["Welcome from the bot"]);
    const cid = customer(w, "Cid");
    await cid.text("parar");
    expect((await contactOf(cid.waId)).opted_out).toBe(true);
    // No reply configured: nothing sent, and no flow.
    expect(sentMessages(w, cid.waId)).toEqual([]);
  });
});
