/**
 * What the Graph API emulator holds between requests: numbers and their tokens, templates,
 * media, injected faults, the request log, the clock and the latency. No HTTP here: the route
 * modules (routes/) read and change it, server.ts serves them.
 */
import { createHmac, randomBytes } from "node:crypto";
import { GraphError, unsupported } from "./graph-error.js";
import { newMediaId } from "./ids.js";
import { DEMO_TEMPLATES, type SandboxTemplate } from "./templates.js";

export interface SandboxNumber {
  phoneNumberId: string;
  accessToken: string;
  displayPhoneNumber?: string;
  verifiedName?: string;
  businessAccountId?: string;
  /** two-step PIN already set upstream */
  pin?: string;
}

export interface SandboxFault {
  status?: number;
  error?: { code: number; message: string; type?: string; error_subcode?: number };
  rawBody?: string;
  delayMs?: number;
  /** The connection drops before the request is handled: Meta never got it. */
  drop?: boolean;
  /** Meta takes the request (a send is accepted, its statuses follow), then the connection drops before the answer. */
  dropAfterAccept?: boolean;
  /** default 1 */
  times?: number;
}

export interface FaultMatch {
  method?: string;
  path?: string | RegExp;
  readReceipts?: boolean;
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  body: unknown;
  at: Date;
}

/** A file Meta holds: sent by a customer, or uploaded by the business. */
export interface SandboxMediaInput {
  bytes: Buffer;
  mimeType: string;
  /** The number the file belongs to (its token may download it). */
  phoneNumberId: string;
  /** What `GET /{media_id}` announces; defaults to the real hash and size (tests announce wrong ones). */
  sha256?: string;
  fileSize?: number;
}

export interface StoredMedia extends SandboxMediaInput {
  filename?: string;
}

export interface NumberState extends SandboxNumber {
  registered: boolean;
}

/** A message the sandbox accepted on `POST /{phone_number_id}/messages`. */
export interface AcceptedMessage {
  phoneNumberId: string;
  to: string;
  messageId: string;
  type: string;
  /** The send's `biz_opaque_callback_data`, which Meta echoes in the message's status webhooks. */
  callbackData?: string;
}

interface SendTally {
  count: number;
  first: number;
  last: number;
}

/** `GET /_sandbox/sends`: what sendsTo found. */
export interface SendsSummary {
  /** Messages accepted. */
  sends: number;
  /** Distinct recipients among them. */
  recipients: number;
  /** Recipients who were sent more than one. */
  repeated: number;
  /** When the first and the last of them were accepted (null when none was). */
  first_at: string | null;
  last_at: string | null;
}

interface FaultRule {
  method: string | undefined;
  path: string | RegExp | undefined;
  readReceipts: boolean;
  fault: SandboxFault;
  remaining: number;
}

/** How many requests the log keeps by default: a long demo or a load test must not grow without bound. */
export const DEFAULT_LOG_LIMIT = 20_000;

export class SandboxState {
  /** The base URL (set once the server listens), for the URLs the answers hold. */
  url = "";
  readonly numbers = new Map<string, NumberState>();
  readonly waIdRewrites = new Map<string, string>();
  readonly media = new Map<string, StoredMedia>();
  private readonly templateLists = new Map<string, SandboxTemplate[]>();
  private readonly signingKey = randomBytes(32);
  private clockOffsetMs = 0;
  private faults: FaultRule[] = [];
  private readonly logLimit: number;
  private readonly startLatencyMs: number;
  latencyMs: number;
  private log: RecordedRequest[] = [];
  /** Requests recorded since the log was last cleared, kept or not. */
  private received = 0;
  /** Messages accepted since the log was last cleared, by type and recipient (never trimmed). */
  private tally = new Map<string, SendTally>();

  constructor(options: { logLimit?: number; latencyMs?: number }) {
    this.logLimit = Math.max(1, options.logLimit ?? DEFAULT_LOG_LIMIT);
    this.startLatencyMs = Math.max(0, options.latencyMs ?? 0);
    this.latencyMs = this.startLatencyMs;
  }

  now = () => Date.now() + this.clockOffsetMs;

  advanceTime(ms: number) {
    this.clockOffsetMs += ms;
  }

  sign = (value: string) => createHmac("sha256", this.signingKey).update(value).digest("base64url");

  addNumber(n: SandboxNumber) {
    this.numbers.set(n.phoneNumberId, { ...n, registered: n.pin !== undefined });
  }

  addMedia(input: SandboxMediaInput & { filename?: string }): string {
    const id = newMediaId();
    this.media.set(id, { ...input });
    return id;
  }

  /** A business account's templates; each account starts with DEMO_TEMPLATES. */
  templatesOf(wabaId: string): SandboxTemplate[] {
    let list = this.templateLists.get(wabaId);
    if (!list) {
      list = DEMO_TEMPLATES.map((t) => structuredClone(t));
      this.templateLists.set(wabaId, list);
    }
    return list;
  }

  setTemplates(wabaId: string, list: SandboxTemplate[]) {
    this.templateLists.set(
      wabaId,
      list.map((t) => structuredClone(t)),
    );
  }

  record(entry: RecordedRequest) {
    this.received += 1;
    this.log.push(entry);
    // Trimmed in steps of a whole limit, so that a push costs the same however full the log is.
    if (this.log.length >= 2 * this.logLimit) this.log = this.log.slice(-this.logLimit);
  }

  requests = () => this.log.slice(-this.logLimit);
  droppedRequests = () => this.received - Math.min(this.log.length, this.logLimit);

  clearRequests() {
    this.log = [];
    this.received = 0;
    this.tally = new Map();
  }

  /** Counts an accepted message for its recipient (see sendsTo): a few bytes per recipient. */
  countSend(message: AcceptedMessage) {
    const at = Date.now();
    const key = `${message.type}\u0000${message.to}`;
    const seen = this.tally.get(key);
    if (seen) {
      seen.count += 1;
      seen.last = at;
    } else {
      this.tally.set(key, { count: 1, first: at, last: at });
    }
  }

  /**
   * The messages of a type accepted since the log was last cleared, for
   * recipients whose number starts with `toPrefix`: however many there were
   * (the request log keeps only the newest SANDBOX_LOG_LIMIT), so a campaign
   * of any size can be checked for sends exactly once.
   */
  sendsTo(type: string, toPrefix = ""): SendsSummary {
    const summary: SendsSummary = { sends: 0, recipients: 0, repeated: 0, first_at: null, last_at: null };
    let first = Number.POSITIVE_INFINITY;
    let last = Number.NEGATIVE_INFINITY;
    const head = `${type}\u0000${toPrefix}`;
    for (const [key, seen] of this.tally) {
      if (!key.startsWith(head)) continue;
      summary.sends += seen.count;
      summary.recipients += 1;
      if (seen.count > 1) summary.repeated += 1;
      first = Math.min(first, seen.first);
      last = Math.max(last, seen.last);
    }
    if (summary.recipients > 0) {
      summary.first_at = new Date(first).toISOString();
      summary.last_at = new Date(last).toISOString();
    }
    return summary;
  }

  inject(match: FaultMatch, fault: SandboxFault) {
    this.faults.push({
      method: match.method?.toUpperCase(),
      path: match.path,
      readReceipts: match.readReceipts ?? false,
      fault,
      remaining: fault.times ?? 1,
    });
  }

  /** The next fault that applies to this request, counted as used. */
  takeFault(method: string, path: string, readReceipt = false): SandboxFault | undefined {
    const rule = this.faults.find(
      (f) =>
        f.remaining > 0 &&
        (!f.method || f.method === method) &&
        pathMatches(f.path, path) &&
        f.readReceipts === readReceipt,
    );
    if (!rule) return undefined;
    rule.remaining -= 1;
    this.faults = this.faults.filter((f) => f.remaining > 0);
    return rule.fault;
  }

  /** Meta checks the token first (190), then whether it reaches the object (100). */
  checkToken(token: string | undefined) {
    if (!token) {
      throw new GraphError({
        status: 401,
        code: 190,
        type: "OAuthException",
        message: "An active access token must be used to query information about the current user.",
      });
    }
    if (![...this.numbers.values()].some((n) => n.accessToken === token)) {
      throw new GraphError({
        status: 401,
        code: 190,
        subcode: 463,
        type: "OAuthException",
        message: "Invalid OAuth access token - Cannot parse access token",
      });
    }
  }

  /** The number `id` when the token reaches it. */
  phoneNumberFor(id: string, token: string | undefined, method: string): NumberState {
    this.checkToken(token);
    const number = this.numbers.get(id);
    if (!number || number.accessToken !== token) throw unsupported(method, id);
    return number;
  }

  /** Throws unless the token reaches a number of business account `id`. */
  checkWaba(id: string, token: string | undefined, method: string) {
    this.checkToken(token);
    const owns = [...this.numbers.values()].some(
      (n) => n.businessAccountId === id && n.accessToken === token,
    );
    if (!owns) throw unsupported(method, id);
  }

  /** numbers, faults, log, latency, rewrites */
  reset() {
    this.waIdRewrites.clear();
    this.numbers.clear();
    this.templateLists.clear();
    this.media.clear();
    this.clockOffsetMs = 0;
    this.latencyMs = this.startLatencyMs;
    this.faults = [];
    this.clearRequests();
  }
}

/** String paths match the whole path, the path after the version prefix, or its ending. */
function pathMatches(pattern: string | RegExp | undefined, path: string): boolean {
  if (pattern === undefined) return true;
  if (pattern instanceof RegExp) return pattern.test(path);
  return path === pattern || path.endsWith(pattern);
}
