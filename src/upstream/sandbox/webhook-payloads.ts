/**
 * Builders of the webhook bodies Meta posts to the service, in the shapes of
 * the examples under `/whatsapp/webhooks` in Meta's OpenAPI description:
 * `{ object, entry: [{ id, changes: [{ field: "messages", value }] }] }`.
 * Pure apart from fresh ids and the current time when none are given.
 */
import { createHmac } from "node:crypto";
import { newWamid } from "./ids.js";

/** What Meta puts in `X-Hub-Signature-256`: HMAC-SHA256 of the raw body with the app secret. */
export function signPayload(rawBody: string, appSecret: string): string {
  return `sha256=${createHmac("sha256", appSecret).update(rawBody, "utf8").digest("hex")}`;
}

interface Sender {
  phoneNumberId: string;
  displayPhoneNumber?: string;
  /** The WhatsApp Business Account id (entry[].id); a placeholder when absent. */
  businessAccountId?: string;
  /** The customer's number, or their BSUID (`US.1349…`) for a customer who hides it behind a username. */
  from: string;
  name?: string;
  /** The WhatsApp username Meta shows for the customer. */
  username?: string;
  messageId?: string;
  timestamp?: number;
}

const DEFAULT_DISPLAY_NUMBER = "15550000000";
const DEFAULT_WABA_ID = "100000000000000";

const unixSeconds = (timestamp?: number) => String(timestamp ?? Math.floor(Date.now() / 1000));

function envelope(
  i: { phoneNumberId: string; displayPhoneNumber?: string; businessAccountId?: string },
  value: object,
) {
  return {
    object: "whatsapp_business_account",
    entry: [
      {
        id: i.businessAccountId ?? DEFAULT_WABA_ID,
        changes: [
          {
            value: {
              messaging_product: "whatsapp",
              metadata: {
                display_phone_number: i.displayPhoneNumber ?? DEFAULT_DISPLAY_NUMBER,
                phone_number_id: i.phoneNumberId,
              },
              ...value,
            },
            field: "messages",
          },
        ],
      },
    ],
  };
}

/** One inbound message from a customer, with its contact block. */
function inbound(i: Sender, message: Record<string, unknown>, context?: { from: string; id: string }) {
  const messageId = i.messageId ?? newWamid();
  // A customer who hides their number: Meta sends the BSUID (user_id, from_user_id) and no phone.
  const hidden = /^[A-Z]{2}\./.test(i.from);
  const profile = { name: i.name ?? "Customer", ...(i.username ? { username: i.username } : {}) };
  const payload = envelope(i, {
    contacts: [hidden ? { profile, user_id: i.from } : { profile, wa_id: i.from }],
    messages: [
      {
        ...(context ? { context } : {}),
        ...(hidden ? { from_user_id: i.from } : { from: i.from }),
        id: messageId,
        timestamp: unixSeconds(i.timestamp),
        ...message,
      },
    ],
  });
  return { payload, messageId };
}

const replyContext = (i: Sender & { contextMessageId?: string }) =>
  i.contextMessageId
    ? { from: i.displayPhoneNumber ?? DEFAULT_DISPLAY_NUMBER, id: i.contextMessageId }
    : undefined;

export function inboundTextPayload(i: Sender & { text: string }): { payload: object; messageId: string } {
  return inbound(i, { type: "text", text: { body: i.text } });
}

export function buttonReplyPayload(
  i: Sender & { replyId: string; title: string; contextMessageId?: string },
): { payload: object; messageId: string } {
  return inbound(
    i,
    {
      type: "interactive",
      interactive: { type: "button_reply", button_reply: { id: i.replyId, title: i.title } },
    },
    replyContext(i),
  );
}

export function listReplyPayload(
  i: Sender & { replyId: string; title: string; description?: string; contextMessageId?: string },
): { payload: object; messageId: string } {
  return inbound(
    i,
    {
      type: "interactive",
      interactive: {
        type: "list_reply",
        list_reply: {
          id: i.replyId,
          title: i.title,
          ...(i.description === undefined ? {} : { description: i.description }),
        },
      },
    },
    replyContext(i),
  );
}

/** A customer's reaction; without an emoji it is the removal of their reaction (Meta omits `emoji`). */
export function reactionPayload(i: Sender & { targetMessageId: string; emoji?: string }): {
  payload: object;
  messageId: string;
} {
  return inbound(i, {
    type: "reaction",
    reaction: { message_id: i.targetMessageId, ...(i.emoji ? { emoji: i.emoji } : {}) },
  });
}

export function statusPayload(i: {
  phoneNumberId: string;
  displayPhoneNumber?: string;
  businessAccountId?: string;
  messageId: string;
  recipientId: string;
  status: "sent" | "delivered" | "read" | "failed";
  error?: { code: number; title: string; message?: string };
  timestamp?: number;
  /** The send's `biz_opaque_callback_data`, echoed as Meta does. */
  callbackData?: string;
}): { payload: object } {
  const status: Record<string, unknown> = {
    id: i.messageId,
    status: i.status,
    timestamp: unixSeconds(i.timestamp),
    recipient_id: i.recipientId,
    ...(i.callbackData === undefined ? {} : { biz_opaque_callback_data: i.callbackData }),
  };
  if (i.status === "failed" || i.error) {
    const error = i.error ?? { code: 131000, title: "Something went wrong" };
    status.errors = [
      {
        code: error.code,
        title: error.title,
        message: error.message ?? error.title,
        error_data: { details: error.message ?? error.title },
      },
    ];
  } else {
    status.pricing = { billable: true, pricing_model: "PMP", category: "service" };
  }
  return { payload: envelope(i, { statuses: [status] }) };
}

/** A customer's image, audio, video, document or sticker: Meta sends the media id, never the bytes. */
export function inboundMediaPayload(
  i: Sender & {
    type: "image" | "audio" | "video" | "document" | "sticker";
    mediaId: string;
    mimeType: string;
    sha256: string;
    caption?: string;
    filename?: string;
  },
): { payload: object; messageId: string } {
  return inbound(i, {
    type: i.type,
    [i.type]: {
      ...(i.caption === undefined ? {} : { caption: i.caption }),
      ...(i.filename === undefined ? {} : { filename: i.filename }),
      mime_type: i.mimeType,
      sha256: i.sha256,
      id: i.mediaId,
    },
  });
}

/**
 * Meta's `message_template_status_update` change: a template was approved,
 * rejected, paused... It names the business account (entry id), not a number.
 */
export function templateStatusPayload(i: {
  businessAccountId: string;
  templateId: string;
  name: string;
  language: string;
  event: string;
  reason?: string;
  timestamp?: number;
}): { payload: object } {
  return {
    payload: {
      object: "whatsapp_business_account",
      entry: [
        {
          id: i.businessAccountId,
          time: Number(unixSeconds(i.timestamp)),
          changes: [
            {
              value: {
                event: i.event,
                message_template_id: Number(i.templateId),
                message_template_name: i.name,
                message_template_language: i.language,
                reason: i.reason ?? "NONE",
              },
              field: "message_template_status_update",
            },
          ],
        },
      ],
    },
  };
}
