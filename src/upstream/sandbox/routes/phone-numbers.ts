/** `GET /{id}` (a phone number, or a media id: see media.ts) and `POST /{phone_number_id}/register`. */
import type { FastifyInstance } from "fastify";
import { GraphError, invalidParameter } from "../graph-error.js";
import type { NumberState, SandboxState } from "../state.js";
import { asObject, graphRoute } from "./answer.js";
import { mediaInfo } from "./media.js";

const PHONE_FIELDS = ["id", "display_phone_number", "verified_name", "quality_rating"] as const;

export function phoneNumberRoutes(app: FastifyInstance, state: SandboxState) {
  graphRoute(app, state, "GET", undefined, ({ objectId, token, query, method }) => {
    if (state.media.has(objectId)) return mediaInfo(state, objectId, token, query.phone_number_id);
    return phoneInfo(state.phoneNumberFor(objectId, token, method), query.fields);
  });
  graphRoute(app, state, "POST", "register", ({ objectId, token, body, method }) =>
    register(state.phoneNumberFor(objectId, token, method), body),
  );
}

function phoneInfo(number: NumberState, fields: string | undefined) {
  const all: Record<string, unknown> = {
    id: number.phoneNumberId,
    display_phone_number: number.displayPhoneNumber ?? "+1 555-000-0000",
    verified_name: number.verifiedName ?? "Sandbox Business",
    quality_rating: "GREEN",
    code_verification_status: "VERIFIED",
    platform_type: "CLOUD_API",
    status: number.registered ? "CONNECTED" : "PENDING",
  };
  const wanted = fields ? fields.split(",").map((f) => f.trim()) : [...PHONE_FIELDS];
  const answer: Record<string, unknown> = { id: number.phoneNumberId };
  for (const field of wanted) if (field in all) answer[field] = all[field];
  return answer;
}

function register(number: NumberState, body: unknown) {
  const b = asObject(body);
  if (b.messaging_product !== "whatsapp") throw invalidParameter("messaging_product must be 'whatsapp'");
  if (typeof b.pin !== "string" || !/^[0-9]{6}$/.test(b.pin)) {
    throw invalidParameter("pin must be a string of exactly 6 digits");
  }
  if (number.pin !== undefined && number.pin !== b.pin) {
    throw new GraphError({
      status: 400,
      code: 133005,
      type: "OAuthException",
      message: "Two step verification PIN Mismatch",
      details: "The two-step verification PIN you entered is incorrect.",
    });
  }
  number.pin = b.pin;
  number.registered = true;
  return { success: true };
}
