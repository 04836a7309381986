import { describe, expect } from "vitest";
import { sandboxTest as it } from "../helpers/fixtures.js";
import { type Business, customerOf, messagesOf, type SandboxedApp } from "../helpers/sandbox-app.js";

// biome-ignore lint/suspicious/noExplicitAny: API JSON read in tests
type Json = any;

const api = (s: SandboxedApp, b: Business, method: "GET" | "POST", url: string, payload?: unknown) =>
  s.t.app.inject({
    method,
    url,
    headers: b.user.headers,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });

describe("a number Meta rewrites", () => {
  it("threads the customer's reply from Meta's WhatsApp id into the contact the business created", async ({
    s,
    biz: b,
  }) => {
    expect((await api(s, b, "POST", "/api/messaging/templates/sync")).statusCode).toBe(200);
    const created = await api(s, b, "POST", "/api/contacts", { phone: "+55 11 98765-4321", name: "Bruna" });
    expect(created.statusCode).toBe(201);
    const contactId = created.json().contact.id;
    // Meta delivers to the account registered without the ninth digit.
    s.sandbox.rewriteWaId("5511987654321", "551187654321");
    const started = await api(s, b, "POST", "/api/conversations", {
      phone: "+5511987654321",
      template: { name: "hello_world", language: "en_US" },
    });
    expect(started.statusCode, started.body).toBe(201);
    expect(started.json().conversation.contact.id).toBe(contactId);

    await customerOf(s, b, "551187654321", "Bruna").text("Oi!");

    const contacts = (await api(s, b, "GET", "/api/contacts")).json().contacts as Json[];
    expect(contacts).toHaveLength(1);
    expect(contacts[0]).toMatchObject({ id: contactId, wa_id: "551187654321", phone: "5511987654321" });
    const messages = await messagesOf(s, b, contacts[0].conversation_id);
    expect(messages.map((m: Json) => [m.direction, m.text])).toEqual([
      ["outbound", expect.any(String)],
      ["inbound", "Oi!"],
    ]);

    // Starting again with the number as the business knows it keeps the one contact.
    const again = await api(s, b, "POST", "/api/conversations", {
      phone: "5511987654321",
      template: { name: "hello_world", language: "en_US" },
    });
    expect(again.json().conversation.contact.id).toBe(contactId);
  });
});
