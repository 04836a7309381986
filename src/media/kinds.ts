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
