import { fileTypeFromBuffer } from "file-type";

/**
 * Which files WhatsApp takes, as what kind of message, and how large
 * (Meta's documented limits). A type outside this list cannot be sent.
 */
export type MediaKind = "image" | "video" | "audio" | "document";

const MB = 1024 * 1024;

export const MEDIA_LIMITS: Record<MediaKind, number> = {
  image: 5 * MB,
  video: 16 * MB,
  audio: 16 * MB,
  document: 100 * MB,
};

const KIND_OF: Record<string, MediaKind> = {
  "image/jpeg": "image",
  "image/png": "image",
  "video/mp4": "video",
  "video/3gpp": "video",
  "audio/aac": "audio",
  "audio/mp4": "audio",
  "audio/mpeg": "audio",
  "audio/amr": "audio",
  "audio/ogg": "audio",
  "text/plain": "document",
  "application/pdf": "document",
  "application/msword": "document",
  "application/vnd.ms-excel": "document",
  "application/vnd.ms-powerpoint": "document",
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "document",
  "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "document",
  "application/vnd.openxmlformats-officedocument.presentationml.presentation": "document",
};

export const SENDABLE_TYPES = Object.keys(KIND_OF);

/** A MIME type without parameters, lower-cased: `Image/JPEG; x=1` -> `image/jpeg`. */
export const bareMimeType = (value: string | undefined) => (value ?? "").split(";")[0]!.trim().toLowerCase();

export function mediaKindOf(mimeType: string): MediaKind | null {
  return KIND_OF[bareMimeType(mimeType)] ?? null;
}

/** The largest inbound file we store (Meta's own maximum). */
export const MAX_INBOUND_BYTES = 100 * MB;

// C0 and C1 controls, DEL, and the Unicode bidirectional formatting characters (ALM, LRM, RLM,
// the embeddings and overrides LRE..RLO, the isolates LRI..PDI): a right-to-left override makes
// `invoice\u202Efdp.exe` show as `invoiceexe.pdf`.
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed.
const HIDDEN = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** The filename without control and bidirectional formatting characters. */
export const cleanFilename = (name: string) => name.replace(HIDDEN, "");

/** Why a filename cannot be used, or null. Names are shown to customers and sent in headers. */
export function filenameProblem(name: string): string | null {
  if (name.trim() === "") return "the filename is empty";
  if (name.length > 240) return "the filename is longer than 240 characters";
  if (/[/\\]/.test(name)) return "the filename contains a path separator";
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused.
  if (/[\u0000-\u001f\u007f-\u009f]/.test(name)) return "the filename contains a control character";
  if (name === "." || name === "..") return "the filename is not a file name";
  return null;
}

/**
 * What the bytes of a file may be detected as (file-type) when declared as
 * each type WhatsApp takes: the same format, or a container the format lives
 * in (an MP4 audio file is detected as MP4 video, a .doc as a CFB container).
 */
const DETECTED_AS: Record<string, string[]> = {
  "image/jpeg": ["image/jpeg"],
  "image/png": ["image/png", "image/apng"],
  "video/mp4": ["video/mp4", "video/x-m4v"],
  "video/3gpp": ["video/3gpp", "video/3gpp2", "video/mp4"],
  "audio/aac": ["audio/aac", "audio/x-m4a", "audio/mp4"],
  "audio/mp4": ["audio/mp4", "audio/x-m4a", "video/mp4", "audio/aac"],
  "audio/mpeg": ["audio/mpeg"],
  "audio/amr": ["audio/amr"],
  "audio/ogg": ["audio/ogg", "audio/opus"],
  "application/pdf": ["application/pdf"],
  "application/msword": ["application/msword", "application/x-cfb"],
  "application/vnd.ms-excel": ["application/vnd.ms-excel", "application/x-cfb"],
  "application/vnd.ms-powerpoint": ["application/vnd.ms-powerpoint", "application/x-cfb"],
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document": [
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "application/zip",
  ],
  "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": [
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "application/zip",
  ],
  "application/vnd.openxmlformats-officedocument.presentationml.presentation": [
    "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "application/zip",
  ],
};

/**
 * Why the file's bytes are not what its declared type says (checked by their
 * signature with file-type), or null. Plain text has no signature: it must
 * match none and hold no NUL byte.
 */
export async function contentProblem(bytes: Uint8Array, declared: string): Promise<string | null> {
  const detected = await fileTypeFromBuffer(bytes);
  if (declared === "text/plain") {
    if (detected) return `its content is ${detected.mime}, not text/plain`;
    if (bytes.includes(0)) return "its content is binary, not text/plain";
    return null;
  }
  if (!detected) return `its content is not ${declared}`;
  if (!(DETECTED_AS[declared] ?? [declared]).includes(detected.mime)) {
    return `its content is ${detected.mime}, not ${declared}`;
  }
  return null;
}

/** A Content-Type that is safe to send back: a plain `type/subtype`, else octet-stream. */
export function servableType(mimeType: unknown): string {
  const bare = typeof mimeType === "string" ? bareMimeType(mimeType) : "";
  return /^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*$/.test(bare)
    ? bare
    : "application/octet-stream";
}

/** `attachment` with an ASCII fallback name and the exact name in RFC 5987 form. */
export function attachmentDisposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]|["\\;]/g, "_");
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}
