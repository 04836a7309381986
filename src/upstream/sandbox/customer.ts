/**
 * A simulated WhatsApp customer: posts Meta-shaped webhook bodies to the
 * service's webhook URL, signed with the app secret the way Meta signs them.
 */
import {
  buttonReplyPayload,
  inboundMediaPayload,
  inboundTextPayload,
  listReplyPayload,
  reactionPayload,
  signPayload,
  statusPayload,
} from "./webhook-payloads.js";

export interface CustomerOptions {
  webhookUrl: string;
  appSecret: string;
  phoneNumberId: string;
  /** The customer's WhatsApp id (digits). */
  /** The customer's number, or a BSUID (`US.…`) to play a customer who shows only a username. */
  waId: string;
  name?: string;
  username?: string;
  displayPhoneNumber?: string;
  businessAccountId?: string;
}

export interface Delivery {
  /** HTTP status the webhook answered. */
  status: number;
  /** The upstream id of the message the customer sent. */
  messageId: string;
}

export interface Customer {
  text(body: string, options?: { messageId?: string; timestamp?: number }): Promise<Delivery>;
  buttonReply(reply: {
    replyId: string;
    title: string;
    contextMessageId?: string;
    messageId?: string;
  }): Promise<Delivery>;
  listReply(reply: {
    replyId: string;
    title: string;
    description?: string;
    contextMessageId?: string;
    messageId?: string;
  }): Promise<Delivery>;
  /** Sends a file already held by the sandbox (see Sandbox.addMedia), by its media id. */
  media(file: {
    type: "image" | "audio" | "video" | "document" | "sticker";
    mediaId: string;
    mimeType: string;
    sha256: string;
    caption?: string;
    filename?: string;
    messageId?: string;
    timestamp?: number;
  }): Promise<Delivery>;
  /** Reacts to a message; no emoji removes the customer's reaction. */
  react(targetMessageId: string, emoji?: string): Promise<Delivery>;
  /** A status update for a message the business sent to this customer. */
  status(update: {
    messageId: string;
    status: "sent" | "delivered" | "read" | "failed";
    error?: { code: number; title: string; message?: string };
  }): Promise<{ status: number }>;
}

export function createCustomer(o: CustomerOptions): Customer {
  const sender = {
    phoneNumberId: o.phoneNumberId,
    displayPhoneNumber: o.displayPhoneNumber,
    businessAccountId: o.businessAccountId,
    from: o.waId,
    name: o.name,
    username: o.username,
  };

  async function post(payload: object): Promise<number> {
    const raw = JSON.stringify(payload);
    const response = await fetch(o.webhookUrl, {
      method: "POST",
      headers: { "content-type": "application/json", "x-hub-signature-256": signPayload(raw, o.appSecret) },
      body: raw,
    });
    await response.arrayBuffer();
    return response.status;
  }

  async function deliver(built: { payload: object; messageId: string }): Promise<Delivery> {
    return { status: await post(built.payload), messageId: built.messageId };
  }

  return {
    text: (body, options = {}) => deliver(inboundTextPayload({ ...sender, ...options, text: body })),
    buttonReply: (reply) => deliver(buttonReplyPayload({ ...sender, ...reply })),
    listReply: (reply) => deliver(listReplyPayload({ ...sender, ...reply })),
    media: (file) => deliver(inboundMediaPayload({ ...sender, ...file })),
    react: (targetMessageId, emoji) => deliver(reactionPayload({ ...sender, targetMessageId, emoji })),
    async status(update) {
      const { payload } = statusPayload({
        phoneNumberId: o.phoneNumberId,
        displayPhoneNumber: o.displayPhoneNumber,
        businessAccountId: o.businessAccountId,
        recipientId: o.waId,
        ...update,
      });
      return { status: await post(payload) };
    },
  };
}
