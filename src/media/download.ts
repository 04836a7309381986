import { createHash } from "node:crypto";
import { eq } from "drizzle-orm";
import { messages } from "../db/schema/index.js";
import type { AppDeps } from "../deps.js";
import { ApiError } from "../http/errors.js";
import { channelFor } from "../messaging/channel.js";
import { GraphApiError } from "../upstream/graph.js";
import { MAX_INBOUND_BYTES } from "./kinds.js";

/** A failure no retry can cure (the file is not what Meta announced, or too large). */
class FinalMediaError extends Error {}

export interface Attempt {
  attempt: number;
  maxAttempts: number;
}

/** Where a message's file is kept in the media store. */
export const mediaKey = (accountId: string, messageId: string) => `${accountId}/${messageId}`;
export const mediaUrl = (messageId: string) => `/api/messages/${messageId}/media`;

/**
 * Fetches a customer's media file from Meta and keeps it: `GET /{media_id}`
 * for a fresh URL (valid 5 minutes), the bytes with the bearer token, then
 * size and sha256 checked against what Meta announced before anything is
 * stored. A file that does not match is `failed` at once and never `stored`;
 * other failures throw so the job is tried again, until the last attempt
 * marks the media `failed` with the reason. Runs twice like once: only a
 * `pending` file is fetched.
 */
export async function downloadMessageMedia(
  deps: Pick<AppDeps, "db" | "cipher" | "graph" | "media" | "now">,
  input: { messageId: string },
  attempt: Attempt,
): Promise<"stored" | "failed" | "skipped"> {
  const [message] = await deps.db.select().from(messages).where(eq(messages.id, input.messageId));
  const media = message?.media;
  if (!message || !media || media.status !== "pending" || typeof media.id !== "string") return "skipped";

  const fail = async (reason: string) => {
    await deps.db
      .update(messages)
      .set({ media: { ...media, status: "failed", error: reason }, updatedAt: deps.now() })
      .where(eq(messages.id, message.id));
    return "failed" as const;
  };

  try {
    const channel = await channelFor(deps, message.accountId).catch((error: unknown) => {
      throw error instanceof ApiError ? new FinalMediaError(error.message) : error;
    });
    const info = await deps.graph.getMediaInfo(channel.token, media.id, channel.phoneNumberId);
    if (info.fileSize !== null && info.fileSize > MAX_INBOUND_BYTES) {
      throw new FinalMediaError(`The file is ${info.fileSize} bytes; at most ${MAX_INBOUND_BYTES} are kept`);
    }
    // One byte more than announced is enough to know the file is not the announced one.
    const limit = info.fileSize === null ? MAX_INBOUND_BYTES : info.fileSize + 1;
    const bytes = await deps.graph.downloadMedia(channel.token, info.url, limit).catch((error: unknown) => {
      if (error instanceof GraphApiError && error.kind === "too_large") {
        throw new FinalMediaError(
          info.fileSize === null
            ? `The file is larger than ${MAX_INBOUND_BYTES} bytes`
            : `The file is larger than the ${info.fileSize} bytes Meta announced`,
        );
      }
      throw error;
    });
    if (info.fileSize !== null && bytes.length !== info.fileSize) {
      throw new FinalMediaError(`The file has ${bytes.length} bytes; Meta announced ${info.fileSize}`);
    }
    const digest = createHash("sha256").update(bytes).digest();
    for (const announced of [info.sha256, typeof media.sha256 === "string" ? media.sha256 : null]) {
      if (announced && !sameHash(digest, announced)) {
        throw new FinalMediaError("The file's sha256 does not match the one Meta announced");
      }
    }

    const mimeType = info.mimeType || (typeof media.mime_type === "string" ? media.mime_type : "");
    await deps.media.put(mediaKey(message.accountId, message.id), bytes, mimeType);
    await deps.db
      .update(messages)
      .set({
        media: {
          ...media,
          mime_type: mimeType,
          sha256: typeof media.sha256 === "string" ? media.sha256 : digest.toString("base64"),
          size: bytes.length,
          status: "stored",
          url: mediaUrl(message.id),
        },
        updatedAt: deps.now(),
      })
      .where(eq(messages.id, message.id));
    return "stored";
  } catch (error) {
    if (error instanceof FinalMediaError) return fail(error.message);
    if (attempt.attempt >= attempt.maxAttempts) {
      return fail(`Download failed after ${attempt.attempt} attempts: ${(error as Error).message}`);
    }
    throw error;
  }
}

/** Meta gives sha256 as hex (media endpoint) or base64 (webhooks). */
function sameHash(digest: Buffer, announced: string): boolean {
  const text = announced.trim();
  if (/^[0-9a-f]{64}$/i.test(text)) return digest.toString("hex") === text.toLowerCase();
  return digest.toString("base64") === text || digest.toString("base64url") === text.replace(/=+$/, "");
}
