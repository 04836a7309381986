import { createHmac } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCustomer } from "../../../src/upstream/sandbox/customer.js";
import {
  buttonReplyPayload,
  inboundTextPayload,
  listReplyPayload,
  reactionPayload,
  signPayload,
  statusPayload,
} from "../../../src/upstream/sandbox/webhook-payloads.js";
import { metaOpenApi, shapeOf, validateAgainst, webhookExample } from "./meta-openapi.js";

const who = {
  phoneNumberId: "106540352242922",
  displayPhoneNumber: "15550783881",
  from: "16505551234",
  name: "Sheena",
};

describe("webhook payload builders follow Meta's webhook examples", () => {
  it("builds a text message shaped like the 'Text Message' example", () => {
    const { payload, messageId } = inboundTextPayload({ ...who, text: "Does it come in another color?" });
    expect(shapeOf(payload)).toEqual(shapeOf(webhookExample(metaOpenApi(), "Text Message")));
    const value = changeValue(payload);
    expect(value.metadata).toEqual({
      display_phone_number: "15550783881",
      phone_number_id: who.phoneNumberId,
    });
    expect(value.contacts).toEqual([{ profile: { name: "Sheena" }, wa_id: who.from }]);
    expect(value.messages[0]).toMatchObject({
      from: who.from,
      id: messageId,
      type: "text",
      text: { body: "Does it come in another color?" },
    });
    expect(messageId).toMatch(/^wamid\./);
    expect(value.messages[0].timestamp).toMatch(/^\d{10}$/);
  });

  it("keeps a given message id and unix-second timestamp", () => {
    const { payload, messageId } = inboundTextPayload({
      ...who,
      text: "x",
      messageId: "wamid.fixed",
      timestamp: 1749416383,
    });
    expect(messageId).toBe("wamid.fixed");
    expect(changeValue(payload).messages[0]).toMatchObject({
      id: "wamid.fixed",
      timestamp: "1749416383",
    });
  });

  it("builds button and list replies shaped like the interactive reply examples", () => {
    const doc = metaOpenApi();
    const button = buttonReplyPayload({
      ...who,
      replyId: "cancel-button",
      title: "Cancel",
      contextMessageId: "wamid.out1",
    });
    expect(shapeOf(button.payload)).toEqual(shapeOf(webhookExample(doc, "Interactive Button Reply Message")));
    const list = listReplyPayload({
      ...who,
      replyId: "priority_express",
      title: "Priority Mail Express",
      description: "Next Day to 2 Days",
      contextMessageId: "wamid.out2",
    });
    expect(shapeOf(list.payload)).toEqual(shapeOf(webhookExample(doc, "Interactive List Reply Message")));
    const message = changeValue(list.payload).messages[0];
    expect(message.context).toEqual({ from: "15550783881", id: "wamid.out2" });
    expect(message.interactive).toEqual({
      type: "list_reply",
      list_reply: {
        id: "priority_express",
        title: "Priority Mail Express",
        description: "Next Day to 2 Days",
      },
    });
  });

  it("builds a reaction like the 'Reaction Message' example, and a removal without emoji", () => {
    const reaction = reactionPayload({ ...who, targetMessageId: "wamid.target", emoji: "👍" });
    expect(shapeOf(reaction.payload)).toEqual(shapeOf(webhookExample(metaOpenApi(), "Reaction Message")));
    const removal = reactionPayload({ ...who, targetMessageId: "wamid.target" });
    expect(changeValue(removal.payload).messages[0].reaction).toEqual({
      message_id: "wamid.target",
    });
  });

  it("builds statuses that Meta's StatusMessageValue schema accepts, with errors on failure", () => {
    const doc = metaOpenApi();
    const schema = { $ref: "#/components/schemas/StatusMessageValue" };
    for (const status of ["sent", "delivered", "read"] as const) {
      const { payload } = statusPayload({
        phoneNumberId: who.phoneNumberId,
        messageId: "wamid.a",
        recipientId: who.from,
        status,
      });
      const value = changeValue(payload);
      expect(validateAgainst(doc, schema, value)).toEqual([]);
      expect(value.statuses[0]).toMatchObject({ id: "wamid.a", status, recipient_id: who.from });
      expect(value.statuses[0].errors).toBeUndefined();
    }
    const failed = statusPayload({
      phoneNumberId: who.phoneNumberId,
      messageId: "wamid.b",
      recipientId: who.from,
      status: "failed",
      error: { code: 131047, title: "Re-engagement message" },
    });
    const value = changeValue(failed.payload);
    expect(validateAgainst(doc, schema, value)).toEqual([]);
    expect(value.statuses[0].errors[0]).toMatchObject({ code: 131047, title: "Re-engagement message" });
  });
});

describe("signPayload", () => {
  it("is sha256= and the hex HMAC-SHA256 of the raw body", () => {
    expect(signPayload("The quick brown fox jumps over the lazy dog", "key")).toBe(
      "sha256=f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8",
    );
  });
});

describe("createCustomer", () => {
  let server: Server;
  let url: string;
  const received: Array<{ signature: string | undefined; raw: string }> = [];
  let answer = 200;

  beforeAll(async () => {
    server = createServer((request, response) => {
      let raw = "";
      request.on("data", (c) => {
        raw += c;
      });
      request.on("end", () => {
        received.push({ signature: request.headers["x-hub-signature-256"] as string | undefined, raw });
        response.writeHead(answer).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/messaging/webhook`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("posts signed text, replies, reactions and statuses and reports the webhook's status", async () => {
    const customer = createCustomer({
      webhookUrl: url,
      appSecret: "s3cret",
      phoneNumberId: who.phoneNumberId,
      waId: who.from,
      name: "Sheena",
    });
    received.length = 0;
    const text = await customer.text("hello");
    await customer.buttonReply({ replyId: "yes", title: "Yes" });
    await customer.listReply({ replyId: "r1", title: "Row 1" });
    await customer.react("wamid.x", "❤️");
    answer = 401;
    const status = await customer.status({ messageId: "wamid.x", status: "read" });
    answer = 200;

    expect(text).toEqual({ status: 200, messageId: expect.stringMatching(/^wamid\./) });
    expect(status).toEqual({ status: 401 });
    expect(received).toHaveLength(5);
    for (const r of received) {
      expect(r.signature).toBe(`sha256=${createHmac("sha256", "s3cret").update(r.raw).digest("hex")}`);
    }
    const messages = received.map((r) => JSON.parse(r.raw).entry[0].changes[0].value);
    expect(messages[0].messages[0]).toMatchObject({
      id: text.messageId,
      from: who.from,
      text: { body: "hello" },
    });
    expect(messages[1].messages[0].interactive.button_reply).toEqual({ id: "yes", title: "Yes" });
    expect(messages[2].messages[0].interactive.list_reply).toEqual({ id: "r1", title: "Row 1" });
    expect(messages[3].messages[0].reaction).toEqual({ message_id: "wamid.x", emoji: "❤️" });
    expect(messages[4].statuses[0]).toMatchObject({ id: "wamid.x", status: "read", recipient_id: who.from });
    for (const m of messages) expect(m.metadata.phone_number_id).toBe(who.phoneNumberId);
  });
});

/** The `value` of the first change of a built webhook body. */
// biome-ignore lint/suspicious/noExplicitAny: test access into built JSON
const changeValue = (payload: object): any => (payload as any).entry[0].changes[0].value;
