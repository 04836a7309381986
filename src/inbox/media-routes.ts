import { createHash, randomUUID } from "node:crypto";
import { and, eq } from "drizzle-orm";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { z } from "zod";
import { requireAccount } from "../auth/session.js";
import { messageAnswer } from "../contracts/inbox.js";
import { messages } from "../db/schema/index.js";
import type { AppDeps } from "../deps.js";
import { ApiError, notFound } from "../http/errors.js";
import { isUuid } from "../http/ids.js";
import { docs } from "../http/openapi.js";
import { isStorable, UNSTORABLE_MESSAGE } from "../http/storable.js";
import { mediaKey, mediaUrl } from "../media/download.js";
import {
  attachmentDisposition,
  bareMimeType,
  cleanFilename,
  contentProblem,
  filenameProblem,
  MEDIA_LIMITS,
  type MediaKind,
  mediaKindOf,
  SENDABLE_TYPES,
  servableType,
} from "../media/kinds.js";
import { channelFor } from "../messaging/channel.js";
import { GraphApiError, type OutboundMessage } from "../upstream/graph.js";
import { findConversation } from "./conversations.js";
import { sendAgentText } from "./send.js";
import { requireOpenWindow } from "./window.js";

const TAGS = ["media"];
const idParams = z.object({ id: z.string() });
export const MAX_CAPTION_LENGTH = 1024;
/** Documents the multipart fields (the route reads them itself, as they stream in). */
const uploadDoc = z.object({
  file: z
    .string()
    .meta({ format: "binary" })
    .describe("The file (multipart part with a filename and a Content-Type)"),
  caption: z.string().max(MAX_CAPTION_LENGTH).optional(),
});

interface Upload {
  bytes: Buffer;
  mimeType: string;
  kind: MediaKind;
  filename: string;
  caption: string | undefined;
}

export function registerMediaRoutes(app: FastifyInstance, deps: AppDeps) {
  const { db, sessions } = deps;

  app.post<{ Params: { id: string } }>(
    "/api/conversations/:id/media",
    docs({
      tags: TAGS,
      summary: "Send a photo, video, audio file or document to the conversation's contact",
      description: `multipart/form-data with \`file\` and an optional \`caption\` (documents and images, at most ${MAX_CAPTION_LENGTH} characters). The kind follows the file's type: ${SENDABLE_TYPES.join(", ")}. The bytes must be of the declared type (checked by their signature). Control and bidirectional formatting characters are removed from the filename. Images up to 5 MB, video and audio 16 MB, documents 100 MB. Everything is checked before anything is sent: the file is then uploaded to WhatsApp, sent, and our copy kept (\`media.url\`). Free-form: only within the 24-hour window.`,
      params: idParams,
      body: uploadDoc,
      bodyContentType: "multipart/form-data",
      responses: {
        201: { description: "`{ message }`, status `sent`", body: messageAnswer },
        400: "Not multipart, no file, a second file, a bad filename or caption, channel not configured, or the contact has no phone",
        404: "Not found",
        413: "The file is over WhatsApp's limit for its kind",
        415: "WhatsApp does not take files of this type, or the file's content is not of its declared type",
        422: '`{ error, code: "window_closed" }`: outside the 24-hour window',
        502: "WhatsApp refused or did not answer the upload (nothing stored) or the send (message `failed`)",
      },
    }),
    async (request, reply) => {
      const caller = await sessions.require(request);
      const accountId = requireAccount(caller);
      const found = await findConversation(db, accountId, request.params.id);
      if (!found) throw notFound();
      const upload = await readUpload(request);
      requireOpenWindow(found.conversation, deps.now());
      const channel = await channelFor(deps, accountId);
      if (!found.contact.phone) throw new ApiError(400, "The contact has no phone number");

      let mediaId: string;
      try {
        mediaId = await deps.graph.uploadMedia(channel.token, channel.phoneNumberId, upload);
      } catch (error) {
        if (error instanceof GraphApiError) throw new ApiError(502, error.message);
        throw error;
      }
      const id = randomUUID();
      await deps.media.put(mediaKey(accountId, id), upload.bytes, upload.mimeType);
      const message = await sendAgentText(deps, {
        id,
        accountId,
        userId: caller.userId,
        conversationId: found.conversation.id,
        contactPhone: found.contact.phone,
        text: upload.caption ?? "",
        outbound: outboundMedia(upload, mediaId),
        media: {
          id: mediaId,
          mime_type: upload.mimeType,
          sha256: createHash("sha256").update(upload.bytes).digest("base64"),
          ...(upload.caption === undefined ? {} : { caption: upload.caption }),
          filename: upload.filename,
          size: upload.bytes.length,
          status: "stored",
          url: mediaUrl(id),
        },
      });
      return reply.code(201).send({ message });
    },
  );

  app.get<{ Params: { id: string } }>(
    "/api/messages/:id/media",
    docs({
      account: true,
      tags: TAGS,
      summary: "The file of a media message",
      description:
        "The bytes with their stored Content-Type and Content-Length; documents come as an attachment with a safe filename. Members of the message's account only.",
      params: idParams,
      responses: {
        200: {
          description: "The file, with its own Content-Type",
          contentType: "*/*",
          headers: {
            "content-disposition":
              "`attachment` for documents and unsafe types, else `inline`, with the file name",
            "cache-control": "private, max-age=3600",
          },
        },
        404: "No such message in the caller's account, or its file is not stored (yet)",
      },
    }),
    async (request, reply) => {
      const accountId = requireAccount(await sessions.require(request));
      if (!isUuid(request.params.id)) throw notFound();
      const [message] = await db
        .select()
        .from(messages)
        .where(and(eq(messages.id, request.params.id), eq(messages.accountId, accountId)));
      if (!message) throw notFound();
      const media = message.media;
      if (media?.status !== "stored") throw notFound("The message has no stored media file");
      const bytes = await deps.media.get(mediaKey(accountId, message.id));
      if (!bytes) throw notFound("The message has no stored media file");
      const type = servableType(media.mime_type);
      const cleaned = typeof media.filename === "string" ? cleanFilename(media.filename) : "";
      const filename = cleaned && !filenameProblem(cleaned) ? cleaned : null;
      reply
        .header("content-type", type)
        .header("content-length", bytes.length)
        .header("cache-control", "private, max-age=3600")
        .header("x-content-type-options", "nosniff")
        .header("content-security-policy", "default-src 'none'; sandbox");
      if (message.type === "document" || !/^(image|video|audio)\//.test(type)) {
        reply.header(
          "content-disposition",
          attachmentDisposition(filename ?? `${message.type}-${message.id}`),
        );
      } else if (filename) {
        reply.header(
          "content-disposition",
          `inline; ${attachmentDisposition(filename).replace(/^attachment; /, "")}`,
        );
      }
      return reply.send(bytes);
    },
  );
}

/** The multipart body: one `file` (checked for type and size as it streams in) and an optional caption. */
async function readUpload(request: FastifyRequest): Promise<Upload> {
  if (!request.isMultipart()) {
    throw new ApiError(400, "Send multipart/form-data with a file field (and an optional caption)");
  }
  let file: Omit<Upload, "caption"> | undefined;
  let caption: string | undefined;
  try {
    for await (const part of request.parts()) {
      if (part.type === "field") {
        if (part.fieldname !== "caption") continue;
        if (typeof part.value !== "string") throw new ApiError(400, "caption must be text");
        caption = part.value.trim() === "" ? undefined : part.value.trim();
        continue;
      }
      if (part.fieldname !== "file") {
        part.file.resume();
        throw new ApiError(400, `Unexpected file field "${part.fieldname}": send the file as "file"`);
      }
      if (file) throw new ApiError(400, "Send one file at a time");
      const filename = cleanFilename(part.filename ?? "");
      const problem = filenameProblem(filename);
      if (problem) throw new ApiError(400, `Bad filename: ${problem}`);
      const mimeType = bareMimeType(part.mimetype);
      const kind = mediaKindOf(mimeType);
      if (!kind) {
        throw new ApiError(
          415,
          `WhatsApp does not take files of type ${mimeType || "(none)"}; it takes ${SENDABLE_TYPES.join(", ")}`,
        );
      }
      const bytes = await readLimited(part.file, MEDIA_LIMITS[kind], kind);
      file = { bytes, mimeType, kind, filename };
    }
  } catch (error) {
    if (error instanceof ApiError) throw error;
    const code = (error as { code?: string }).code;
    if (code === "FST_REQ_FILE_TOO_LARGE") {
      throw new ApiError(413, "The file is larger than 100 MB, WhatsApp's largest limit");
    }
    if (code === "FST_FILES_LIMIT" || code === "FST_PARTS_LIMIT" || code === "FST_FIELDS_LIMIT") {
      throw new ApiError(400, "Send one file and at most a caption");
    }
    throw new ApiError(400, "The multipart body could not be read");
  }
  if (!file) throw new ApiError(400, 'file is required: send it as the multipart field "file"');
  if (caption !== undefined && caption.length > MAX_CAPTION_LENGTH) {
    throw new ApiError(400, `caption must be at most ${MAX_CAPTION_LENGTH} characters`);
  }
  if (caption !== undefined && file.kind === "audio") {
    throw new ApiError(400, "WhatsApp does not show captions on audio messages");
  }
  if (caption !== undefined && !isStorable(caption)) throw new ApiError(400, `caption ${UNSTORABLE_MESSAGE}`);
  if (file.bytes.length === 0) throw new ApiError(400, "The file is empty");
  const mismatch = await contentProblem(file.bytes, file.mimeType);
  if (mismatch) {
    throw new ApiError(415, `file: ${mismatch}; WhatsApp takes ${SENDABLE_TYPES.join(", ")}`);
  }
  return { ...file, caption };
}

async function readLimited(stream: AsyncIterable<Buffer> & { resume(): void }, limit: number, kind: string) {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    size += chunk.length;
    if (size > limit) {
      stream.resume();
      throw new ApiError(
        413,
        `The file is over ${limit / (1024 * 1024)} MB, WhatsApp's limit for ${kind} files`,
      );
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

function outboundMedia(upload: Upload, mediaId: string): OutboundMessage {
  const caption = upload.caption === undefined ? {} : { caption: upload.caption };
  switch (upload.kind) {
    case "image":
      return { type: "image", image: { id: mediaId, ...caption } };
    case "video":
      return { type: "video", video: { id: mediaId, ...caption } };
    case "audio":
      return { type: "audio", audio: { id: mediaId } };
    case "document":
      return { type: "document", document: { id: mediaId, ...caption, filename: upload.filename } };
  }
}
