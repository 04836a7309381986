/**
 * Media: `GET /{media_id}` (its download URL, signed and valid 5 minutes), the download itself on
 * Meta's lookaside path, and `POST /{phone_number_id}/media` (a multipart upload within Meta's
 * types and limits).
 */
import { createHash } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { GraphError, invalidParameter, unsupported } from "../graph-error.js";
import { newMediaId } from "../ids.js";
import type { NumberState, SandboxState } from "../state.js";
import { bearer, type FormValue, graphRoute, pathOf, queryOf } from "./answer.js";

/** Where download URLs point, like Meta's lookaside host. */
export const DOWNLOAD_PATH = "/whatsapp_business/attachments/";
export const MEDIA_URL_TTL_MS = 5 * 60 * 1000;
const MB = 1024 * 1024;
/** Meta's upload types and limits (image 5 MB, audio and video 16 MB, documents 100 MB, stickers 500 KB). */
export const UPLOAD_LIMITS: Record<string, number> = {
  "image/jpeg": 5 * MB,
  "image/png": 5 * MB,
  "image/webp": 500 * 1024,
  "video/mp4": 16 * MB,
  "video/3gpp": 16 * MB,
  "audio/aac": 16 * MB,
  "audio/mp4": 16 * MB,
  "audio/mpeg": 16 * MB,
  "audio/amr": 16 * MB,
  "audio/ogg": 16 * MB,
  "text/plain": 100 * MB,
  "application/pdf": 100 * MB,
  "application/vnd.ms-powerpoint": 100 * MB,
  "application/msword": 100 * MB,
  "application/vnd.ms-excel": 100 * MB,
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document": 100 * MB,
  "application/vnd.openxmlformats-officedocument.presentationml.presentation": 100 * MB,
  "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": 100 * MB,
};
/** The largest file any type allows: a bigger multipart file is cut off while it streams in. */
export const LARGEST_UPLOAD = Math.max(...Object.values(UPLOAD_LIMITS));

export function mediaRoutes(app: FastifyInstance, state: SandboxState) {
  graphRoute(app, state, "POST", "media", ({ objectId, token, method, body }) =>
    upload(state, state.phoneNumberFor(objectId, token, method), body),
  );

  // Meta's download URLs need the bearer token of the number and stop working after 5 minutes.
  app.get(DOWNLOAD_PATH, { exposeHeadRoute: false }, async (request, reply) => {
    const refuse = (status: number, text: string) =>
      reply.code(status).type("text/plain; charset=utf-8").send(text);
    const fault = state.takeFault(request.method, pathOf(request));
    if (fault?.status) return reply.code(fault.status).type("text/plain").send("fault");
    const { mid = "", ext = "", hash = "" } = queryOf(request);
    const file = state.media.get(mid);
    if (!file || hash !== state.sign(`${mid}.${ext}`)) return refuse(404, "Not found");
    const token = bearer(request.headers.authorization);
    if (!token || state.numbers.get(file.phoneNumberId)?.accessToken !== token) {
      return refuse(401, "Unauthorized");
    }
    if (state.now() > Number(ext)) return refuse(404, "URL signature expired");
    return reply.code(200).type(file.mimeType).header("content-length", file.bytes.length).send(file.bytes);
  });
}

export function mediaInfo(
  state: SandboxState,
  mediaId: string,
  token: string | undefined,
  phoneNumberId: string | undefined,
) {
  state.checkToken(token);
  const file = state.media.get(mediaId);
  const owner = file ? state.numbers.get(file.phoneNumberId) : undefined;
  if (!file || owner?.accessToken !== token) throw unsupported("GET", mediaId);
  if (phoneNumberId !== undefined && phoneNumberId !== file.phoneNumberId) {
    throw invalidParameter("The media does not belong to the given phone_number_id");
  }
  const expires = state.now() + MEDIA_URL_TTL_MS;
  const url = new URL(DOWNLOAD_PATH, state.url);
  url.searchParams.set("mid", mediaId);
  url.searchParams.set("ext", String(expires));
  url.searchParams.set("hash", state.sign(`${mediaId}.${expires}`));
  return {
    messaging_product: "whatsapp",
    url: url.toString(),
    mime_type: file.mimeType,
    sha256: file.sha256 ?? createHash("sha256").update(file.bytes).digest("hex"),
    file_size: String(file.fileSize ?? file.bytes.length),
    id: mediaId,
  };
}

/** Meta's refusal of a file it does not take. */
export const uploadError = (details: string) =>
  new GraphError({
    status: 400,
    code: 131053,
    type: "OAuthException",
    message: "Media upload error",
    details,
  });

function upload(state: SandboxState, number: NumberState, body: unknown) {
  const form = body instanceof Map ? (body as Map<string, FormValue>) : undefined;
  if (!form) throw invalidParameter("The upload must be multipart/form-data");
  if (form.get("messaging_product")?.text !== "whatsapp") {
    throw invalidParameter("messaging_product must be 'whatsapp'");
  }
  const file = form.get("file");
  if (!file?.bytes || !file.contentType) throw invalidParameter("file is required");
  const type = file.contentType.split(";")[0]?.trim().toLowerCase() ?? "";
  const limit = UPLOAD_LIMITS[type];
  if (limit === undefined) throw uploadError(`Unsupported file type ${type}`);
  if (file.bytes.length > limit) {
    throw uploadError(`The file is larger than ${limit} bytes, the limit for ${type}`);
  }
  const id = newMediaId();
  state.media.set(id, {
    bytes: file.bytes,
    mimeType: type,
    phoneNumberId: number.phoneNumberId,
    filename: file.filename,
  });
  return { id };
}
