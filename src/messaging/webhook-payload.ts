import { MAX_JSON_DEPTH } from "../http/input.js";
import { replaceUnstorable } from "../http/storable.js";
import { customerQueue } from "../queue/names.js";

/**
 * Reads a Meta webhook batch (`{ object, entry: [{ id, changes: [{ field, value }] }] }`)
 * into plain records. Pure: no database, no clock. Whatever does not have the
 * shape Meta documents is skipped with a note saying where and why, so that a
 * malformed part never costs the valid parts beside it.
 */

export const MEDIA_TYPES = ["image", "video", "audio", "document", "sticker"] as const;
export const UPSTREAM_STATUSES = ["sent", "delivered", "read", "failed"] as const;
export type UpstreamStatus = (typeof UPSTREAM_STATUSES)[number];

export interface InteractiveReply {
  type: "button_reply" | "list_reply" | "button";
  id: string;
  title: string;
  description?: string;
}

export interface InboundMessage {
  kind: "message";
  upstreamId: string;
  /** The customer's WhatsApp id: their number, or their BSUID when Meta withholds the number. */
  from: string;
  /** Meta's business-scoped user id (`from_user_id`), when the webhook carries one. */
  fromUserId?: string | null;
  /** The stored type: text, interactive, button, a media type, or `unsupported`. */
  type: string;
  text: string | null;
  interactive: InteractiveReply | null;
  media: Record<string, string> | null;
  /** For `unsupported`: the message as received, minus the envelope fields kept in columns. */
  payload: Record<string, unknown> | null;
  contextMessageId: string | null;
  timestamp: Date | null;
}

export interface InboundReaction {
  kind: "reaction";
  upstreamId: string;
  from: string;
  targetMessageId: string;
  /** Null when the customer removed their reaction. */
  emoji: string | null;
  timestamp: Date | null;
}

export interface StatusUpdate {
  upstreamId: string;
  status: UpstreamStatus;
  /** Meta's first error for a failed message: { code, title, message, details }. */
  error: Record<string, unknown> | null;
  timestamp: Date | null;
  /** Meta's echo of our `biz_opaque_callback_data`: the id of our message, when we sent one. */
  callbackData: string | null;
}

export interface WebhookChange {
  /** Where the change sits in the batch, for logs: `entry[0].changes[1]`. */
  at: string;
  phoneNumberId: string;
  /** wa_id (or BSUID) -> profile name, from `value.contacts`. */
  profiles: Map<string, string>;
  /** wa_id (or BSUID) -> the BSUID and username Meta gives in `value.contacts` (user_id, profile.username). */
  users?: Map<string, { userId: string | null; username: string | null }>;
  items: Array<InboundMessage | InboundReaction>;
  statuses: StatusUpdate[];
}

/** Meta's `message_template_status_update`: a template of a business account changed status. */
export interface TemplateStatusChange {
  at: string;
  /** The business account (the entry's id): template changes name no phone number. */
  businessAccountId: string;
  templateId: string | null;
  name: string | null;
  language: string | null;
  /** APPROVED, REJECTED, PAUSED, DISABLED, ... */
  event: string;
  reason: string | null;
}

export interface WebhookBatch {
  changes: WebhookChange[];
  templateUpdates: TemplateStatusChange[];
  /** One line per skipped part: where, and why. */
  problems: string[];
}

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json =>
  value !== null && typeof value === "object" && !Array.isArray(value);
const nonEmpty = (value: unknown): value is string => typeof value === "string" && value !== "";
const str = (value: unknown) => (typeof value === "string" ? value : null);

// Longer ids than Meta ever sends would not fit a unique index row (about 2.7 KB): such a
// part is skipped rather than failing its change on every redelivery.
export const UPSTREAM_MESSAGE_ID_MAX_LENGTH = 256;
export const WA_ID_MAX_LENGTH = 64;
const tooLong = (value: string, max: number) => value.length > max;

export function readWebhookBatch(body: unknown): WebhookBatch {
  const batch: WebhookBatch = { changes: [], templateUpdates: [], problems: [] };
  const root = cleanStrings(body, batch.problems);
  if (!isObject(root) || !Array.isArray(root.entry)) {
    batch.problems.push("body: no entry array");
    return batch;
  }
  root.entry.forEach((entry, e) => {
    if (!isObject(entry) || !Array.isArray(entry.changes)) {
      batch.problems.push(`entry[${e}]: no changes array`);
      return;
    }
    entry.changes.forEach((change, c) => {
      const at = `entry[${e}].changes[${c}]`;
      if (isObject(change) && change.field === "message_template_status_update") {
        const update = readTemplateStatus(entry.id, change.value, at);
        if (typeof update === "string") batch.problems.push(`${at}: ${update}`);
        else batch.templateUpdates.push(update);
        return;
      }
      const read = readChange(change, at, batch.problems);
      if (read) batch.changes.push(read);
    });
  });
  return batch;
}

function readChange(change: unknown, at: string, problems: string[]): WebhookChange | null {
  if (!isObject(change) || !isObject(change.value)) {
    problems.push(`${at}: no value object`);
    return null;
  }
  // Other fields (account updates, group events...) carry nothing the inbox stores.
  if (change.field !== undefined && change.field !== "messages") return null;
  const value = change.value;
  const phoneNumberId = isObject(value.metadata) ? value.metadata.phone_number_id : undefined;
  if (!nonEmpty(phoneNumberId)) {
    problems.push(`${at}: no metadata.phone_number_id`);
    return null;
  }

  const profiles = new Map<string, string>();
  const users = new Map<string, { userId: string | null; username: string | null }>();
  for (const contact of Array.isArray(value.contacts) ? value.contacts : []) {
    if (!isObject(contact)) continue;
    const userId =
      nonEmpty(contact.user_id) && !tooLong(contact.user_id, WA_ID_MAX_LENGTH) ? contact.user_id : null;
    const key = nonEmpty(contact.wa_id) ? contact.wa_id : userId;
    if (!key) continue;
    const name = isObject(contact.profile) ? contact.profile.name : undefined;
    if (nonEmpty(name)) profiles.set(key, name);
    const username = isObject(contact.profile) ? contact.profile.username : undefined;
    if (userId || nonEmpty(username))
      users.set(key, { userId, username: nonEmpty(username) && username.length <= 100 ? username : null });
  }

  const items: WebhookChange["items"] = [];
  listOf(value, "messages", at, problems).forEach((message, i) => {
    const item = readMessage(message);
    if (typeof item === "string") problems.push(`${at}.value.messages[${i}]: ${item}`);
    else items.push(item);
  });

  const statuses: StatusUpdate[] = [];
  listOf(value, "statuses", at, problems).forEach((status, i) => {
    const update = readStatus(status);
    if (typeof update === "string") problems.push(`${at}.value.statuses[${i}]: ${update}`);
    else statuses.push(update);
  });

  return { at, phoneNumberId, profiles, users, items, statuses };
}

function readTemplateStatus(entryId: unknown, value: unknown, at: string): TemplateStatusChange | string {
  if (!nonEmpty(entryId)) return "template status update without the business account id (entry id)";
  if (!isObject(value) || !nonEmpty(value.event)) return "template status update without event";
  const id = value.message_template_id;
  const templateId = typeof id === "number" || nonEmpty(id) ? String(id) : null;
  const name = str(value.message_template_name);
  const language = str(value.message_template_language);
  if (!templateId && !(name && language)) return "template status update names no template";
  return {
    at,
    businessAccountId: entryId,
    templateId,
    name,
    language,
    event: value.event,
    reason: str(value.reason),
  };
}

function listOf(value: Json, key: string, at: string, problems: string[]): unknown[] {
  const list = value[key];
  if (list === undefined) return [];
  if (Array.isArray(list)) return list;
  problems.push(`${at}.value.${key}: not an array`);
  return [];
}

/** A message or reaction, or the reason it was skipped. */
function readMessage(message: unknown): InboundMessage | InboundReaction | string {
  if (!isObject(message)) return "not an object";
  if (!nonEmpty(message.id)) return "no id";
  // A customer who hides their number behind a username comes with their BSUID only.
  const fromUserId = nonEmpty(message.from_user_id) ? message.from_user_id : null;
  if (!nonEmpty(message.from) && !fromUserId) return "no from";
  if (tooLong(message.id, UPSTREAM_MESSAGE_ID_MAX_LENGTH)) {
    return `id longer than ${UPSTREAM_MESSAGE_ID_MAX_LENGTH} characters`;
  }
  const from = nonEmpty(message.from) ? message.from : (fromUserId as string);
  if (tooLong(from, WA_ID_MAX_LENGTH) || (fromUserId && tooLong(fromUserId, WA_ID_MAX_LENGTH)))
    return `from longer than ${WA_ID_MAX_LENGTH} characters`;
  const upstreamId = message.id;
  const timestamp = readTimestamp(message.timestamp);

  if (message.type === "reaction") {
    const reaction = message.reaction;
    if (!isObject(reaction) || !nonEmpty(reaction.message_id)) return "reaction without message_id";
    if (tooLong(reaction.message_id, UPSTREAM_MESSAGE_ID_MAX_LENGTH)) return "reaction message_id too long";
    const emoji = nonEmpty(reaction.emoji) ? reaction.emoji : null;
    return { kind: "reaction", upstreamId, from, targetMessageId: reaction.message_id, emoji, timestamp };
  }

  const base = {
    kind: "message" as const,
    upstreamId,
    from,
    fromUserId,
    text: null,
    interactive: null,
    media: null,
    payload: null,
    contextMessageId: isObject(message.context) ? str(message.context.id) : null,
    timestamp,
  };
  const modelled = readContent(message);
  if (modelled) return { ...base, ...modelled };

  // Kept whole (minus what the columns hold) so nothing the customer sent is lost.
  const {
    id: _id,
    from: _from,
    from_user_id: _fromUserId,
    timestamp: _timestamp,
    context: _context,
    ...rest
  } = message;
  return { ...base, type: "unsupported", payload: rest };
}

type Content = Pick<InboundMessage, "type" | "text" | "interactive" | "media">;

function readContent(message: Json): Content | null {
  const type = message.type;
  if (type === "text") {
    const body = isObject(message.text) ? message.text.body : undefined;
    return typeof body === "string" ? { type, text: body, interactive: null, media: null } : null;
  }
  if (type === "interactive" && isObject(message.interactive)) {
    const kind = message.interactive.type;
    if (kind !== "button_reply" && kind !== "list_reply") return null;
    const reply = message.interactive[kind];
    if (!isObject(reply) || !nonEmpty(reply.id) || typeof reply.title !== "string") return null;
    const interactive: InteractiveReply = { type: kind, id: reply.id, title: reply.title };
    if (typeof reply.description === "string") interactive.description = reply.description;
    return { type, text: reply.title, interactive, media: null };
  }
  // A quick-reply button of a template message.
  if (type === "button" && isObject(message.button)) {
    const { payload, text } = message.button;
    if (!nonEmpty(payload) || typeof text !== "string") return null;
    return { type, text, interactive: { type: "button", id: payload, title: text }, media: null };
  }
  if (MEDIA_TYPES.includes(type as (typeof MEDIA_TYPES)[number])) {
    const body = message[type as string];
    if (!isObject(body) || !nonEmpty(body.id)) return null;
    const media: Record<string, string> = {};
    for (const key of ["id", "mime_type", "sha256", "caption", "filename"]) {
      const value = body[key];
      if (typeof value === "string") media[key] = value;
    }
    return { type: type as string, text: null, interactive: null, media };
  }
  return null;
}

function readStatus(status: unknown): StatusUpdate | string {
  if (!isObject(status)) return "not an object";
  if (!nonEmpty(status.id)) return "no id";
  if (!UPSTREAM_STATUSES.includes(status.status as UpstreamStatus)) {
    return `unknown status ${JSON.stringify(status.status)}`;
  }
  const first = Array.isArray(status.errors) ? status.errors[0] : undefined;
  let error: Record<string, unknown> | null = null;
  if (isObject(first)) {
    const details = isObject(first.error_data) ? str(first.error_data.details) : null;
    error = {
      code: typeof first.code === "number" ? first.code : null,
      title: str(first.title),
      message: str(first.message) ?? str(first.title),
      details,
    };
  }
  return {
    upstreamId: status.id,
    status: status.status as UpstreamStatus,
    error,
    timestamp: readTimestamp(status.timestamp),
    callbackData: str(status.biz_opaque_callback_data),
  };
}

/** Unix seconds, as Meta sends them (a string); anything else is no timestamp. */
export function readTimestamp(value: unknown): Date | null {
  const text = typeof value === "number" ? String(value) : value;
  if (typeof text !== "string" || !/^\d{1,11}$/.test(text)) return null;
  return new Date(Number(text) * 1000);
}

/**
 * The batch with every string PostgreSQL cannot store repaired (U+FFFD) and
 * every value nested deeper than MAX_JSON_DEPTH dropped (null, noted): one
 * such part must not make a change unstorable or exhaust the stack.
 */
export function cleanStrings(value: unknown, problems: string[] = [], depth = 1): unknown {
  if (typeof value === "string") return replaceUnstorable(value);
  if (value === null || typeof value !== "object") return value;
  if (depth > MAX_JSON_DEPTH) {
    if (!problems.includes(TOO_DEEP)) problems.push(TOO_DEEP);
    return null;
  }
  if (Array.isArray(value)) return value.map((inner) => cleanStrings(inner, problems, depth + 1));
  const out: Json = {};
  for (const [key, inner] of Object.entries(value)) {
    if (key !== "__proto__") out[replaceUnstorable(key)] = cleanStrings(inner, problems, depth + 1);
  }
  return out;
}

const TOO_DEEP = `body: values nested deeper than ${MAX_JSON_DEPTH} levels were dropped`;

/**
 * The job queue a delivery is processed in: its customer's queue (see
 * customerQueue) when every message in it comes from one customer (what Meta
 * sends almost always), so that one customer's deliveries are handled one at a
 * time in the order they arrived; none (processed in parallel) for status
 * updates and for the rare batch mixing customers. Reads only the few fields it
 * needs.
 */
export function deliveryQueue(body: unknown): string | undefined {
  let queue: string | undefined;
  const root = isObject(body) && Array.isArray(body.entry) ? body.entry : [];
  for (const entry of root) {
    const changes = isObject(entry) && Array.isArray(entry.changes) ? entry.changes : [];
    for (const change of changes) {
      const value = isObject(change) && isObject(change.value) ? change.value : null;
      const items = value && Array.isArray(value.messages) ? value.messages : [];
      const phoneNumberId = value && isObject(value.metadata) ? str(value.metadata.phone_number_id) : null;
      for (const item of items) {
        const from = isObject(item) ? (str(item.from) ?? str(item.from_user_id)) : null;
        if (!phoneNumberId || !from) continue;
        const name = customerQueue(phoneNumberId, from);
        if (queue !== undefined && queue !== name) return undefined;
        queue = name;
      }
    }
  }
  return queue;
}
