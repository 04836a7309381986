/**
 * `POST /{phone_number_id}/messages`: a send (checked as Meta checks text, interactive, reaction,
 * template and media messages) or a read receipt (`status: read`, with an optional typing indicator).
 */
import type { FastifyInstance } from "fastify";
import {
  expectedNames,
  expectedParameters,
  givenParameters,
  nameMismatch,
  parameterMismatch,
} from "../../../templates/placeholders.js";
import { GraphError, invalidParameter } from "../graph-error.js";
import { newWamid } from "../ids.js";
import type { AcceptedMessage, NumberState, SandboxState } from "../state.js";
import { asObject, graphRoute } from "./answer.js";

const MEDIA_TYPES = ["image", "video", "document", "audio", "sticker"];

export function messageRoutes(
  app: FastifyInstance,
  state: SandboxState,
  onMessageAccepted: ((message: AcceptedMessage) => void) | undefined,
) {
  graphRoute(app, state, "POST", "messages", ({ objectId, token, method, body }) => {
    const number = state.phoneNumberFor(objectId, token, method);
    if (asObject(body).status === "read") return markRead(body);
    const accepted = acceptMessage(state, number, body);
    state.countSend(accepted);
    onMessageAccepted?.(accepted);
    return {
      messaging_product: "whatsapp",
      contacts: [
        {
          input: accepted.to,
          wa_id: state.waIdRewrites.get(accepted.to) ?? accepted.to.replace(/\D/g, ""),
        },
      ],
      messages: [{ id: accepted.messageId }],
    };
  });
}

function markRead(body: unknown) {
  const b = asObject(body);
  if (b.messaging_product !== "whatsapp") throw invalidParameter("messaging_product must be 'whatsapp'");
  if (typeof b.message_id !== "string" || b.message_id === "")
    throw invalidParameter("message_id is required");
  if (b.typing_indicator !== undefined) {
    const t = asObject(b.typing_indicator);
    if (t.type !== "text") throw invalidParameter("typing_indicator.type must be 'text'");
  }
  return { success: true };
}

function acceptMessage(state: SandboxState, number: NumberState, body: unknown): AcceptedMessage {
  const b = asObject(body);
  if (b.messaging_product !== "whatsapp") throw invalidParameter("messaging_product must be 'whatsapp'");
  // A customer who hides their number is addressed by BSUID in `recipient`; `to` wins when both come.
  const to =
    typeof b.to === "string"
      ? b.to
      : typeof b.recipient === "string" && /^[A-Z]{2}\.[A-Za-z0-9.]+$/.test(b.recipient)
        ? b.recipient
        : undefined;
  if (typeof to !== "string" || !/\d/.test(to)) {
    throw invalidParameter("to (a phone number) or recipient (a BSUID) is required");
  }
  if (typeof b.type !== "string") throw invalidParameter("type is required");
  const payload = b[b.type];
  const p =
    payload !== null && typeof payload === "object" ? (payload as Record<string, unknown>) : undefined;
  if (!p) throw invalidParameter(`${b.type} object is required for type ${b.type}`);
  switch (b.type) {
    case "text":
      if (typeof p.body !== "string" || p.body === "") throw invalidParameter("text.body is required");
      break;
    case "interactive":
      checkInteractive(p);
      break;
    case "reaction":
      if (typeof p.message_id !== "string") throw invalidParameter("reaction.message_id is required");
      if (typeof p.emoji !== "string") throw invalidParameter("reaction.emoji is required");
      break;
    case "template":
      checkTemplate(state, number, p);
      break;
    default:
      if (!MEDIA_TYPES.includes(b.type)) throw invalidParameter(`Unsupported message type: ${b.type}`);
      if (typeof p.link !== "string" && typeof p.id !== "string") {
        throw invalidParameter(`${b.type}.link or ${b.type}.id is required`);
      }
      if (typeof p.id === "string" && state.media.get(p.id)?.phoneNumberId !== number.phoneNumberId) {
        throw invalidParameter(`${b.type}.id is not a media id of this number`);
      }
  }
  return {
    phoneNumberId: number.phoneNumberId,
    to,
    messageId: newWamid(),
    type: b.type,
    ...(typeof b.biz_opaque_callback_data === "string" ? { callbackData: b.biz_opaque_callback_data } : {}),
  };
}

/** Meta's checks of a template send: it must exist in that language, be approved, and get its parameters. */
function checkTemplate(state: SandboxState, number: NumberState, p: Record<string, unknown>) {
  if (typeof p.name !== "string" || p.name === "") throw invalidParameter("template.name is required");
  const language = asObject(p.language).code;
  if (typeof language !== "string" || language === "") {
    throw invalidParameter("template.language.code is required");
  }
  const template = state
    .templatesOf(number.businessAccountId ?? "")
    .find((t) => t.name === p.name && t.language === language);
  if (template?.status !== "APPROVED") {
    throw new GraphError({
      status: 404,
      code: 132001,
      type: "OAuthException",
      message: "(#132001) Template name does not exist in the translation",
      details: `template name (${p.name}) does not exist in ${language}`,
    });
  }
  const given = givenParameters(p.components);
  const mismatch =
    typeof given === "string"
      ? given
      : (parameterMismatch(expectedParameters(template.components), given) ??
        nameMismatch(expectedNames(template.components), p.components));
  if (mismatch) {
    throw new GraphError({
      status: 400,
      code: 132000,
      type: "OAuthException",
      message: "(#132000) Number of parameters does not match the expected number of params",
      details: mismatch,
    });
  }
}

function checkInteractive(p: Record<string, unknown>) {
  const body = p.body as { text?: unknown } | undefined;
  if (typeof body?.text !== "string") throw invalidParameter("interactive.body.text is required");
  const action = (p.action ?? {}) as Record<string, unknown>;
  if (p.type === "button") {
    if (!Array.isArray(action.buttons) || action.buttons.length < 1 || action.buttons.length > 3) {
      throw invalidParameter("interactive.action.buttons must hold 1 to 3 buttons");
    }
  } else if (p.type === "list") {
    if (typeof action.button !== "string" || !Array.isArray(action.sections)) {
      throw invalidParameter("interactive.action.button and interactive.action.sections are required");
    }
  } else {
    throw invalidParameter("interactive.type must be button or list");
  }
}
