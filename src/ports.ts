import type { FastifyRequest } from "fastify";
import type { DbOrTx } from "./db/client.js";
import type { SendPayload, SendPriority } from "./queue/tasks.js";
import type { OutboundMessage, SentMessage } from "./upstream/graph.js";

/**
 * The interfaces of the shared services that AppDeps (deps.ts) carries: the
 * features use them and app.ts builds them, so they live here, below every
 * feature, and each implementation (named beside each) imports its own. This
 * module imports no feature.
 */

/**
 * Who is behind a request: a signed-in user with the account their profile
 * links to, or an API key acting for its account with member rights (then
 * `userId` is the owner who created the key and `apiKeyId` is set).
 */
export interface Caller {
  userId: string;
  email: string;
  name: string;
  sessionId: string | null;
  apiKeyId: string | null;
  accountId: string | null;
  role: "owner" | "member" | null;
}

/** Resolves the caller of a request (src/auth/session.ts). */
export interface Sessions {
  /** Resolves the caller (a session or an API key) or throws 401 `Unauthorized`. */
  require(request: FastifyRequest): Promise<Caller>;
  /** Forgets cached callers of this user (their profile or account link changed). */
  forgetUser(userId: string): void;
  /** Forgets every cached caller (revocations may have been missed). */
  forgetAll(): void;
}

/** Ended sessions, deleted API keys and role changes, heard from every instance (src/auth/revocations.ts). */
export interface Revocations {
  /** Calls `listener` with the user's id (or null: every user) on each change; returns the unsubscribe function. */
  subscribe(listener: (userId: string | null) => void): () => void;
  start(): void;
  close(): Promise<void>;
}

/** This instance's LISTEN connection for the account event streams (src/events/hub.ts). */
export interface EventHub {
  /** Calls `wake` whenever the account may have new events; returns the unsubscribe function. */
  subscribe(accountId: string, wake: () => void): () => void;
  close(): Promise<void>;
}

/** How outbound webhooks are attempted, retried and given up on (src/events/delivery.ts). */
export interface DeliveryPolicy {
  /** An attempt counts as delivered on a 2xx within this time. */
  timeoutMs: number;
  /** Delay before the first retry; each later one is `retryFactor` times longer, up to `maxRetryDelayMs`. */
  firstRetryMs: number;
  retryFactor: number;
  maxRetryDelayMs: number;
  /** No attempt is made later than this after the event. */
  retryWindowMs: number;
  /** An endpoint whose deliveries have failed for this long without a success is disabled. */
  disableAfterMs: number;
}

/**
 * Where media files live (src/media/store.ts). Keys are ours (`<account id>/<message id>`),
 * never a user's filename, so no key can leave its folder or bucket prefix.
 */
export interface MediaStore {
  put(key: string, bytes: Buffer, contentType: string): Promise<void>;
  /** The bytes, or null when nothing is stored under the key. */
  get(key: string): Promise<Buffer | null>;
  /** Removes the file; nothing stored under the key is not an error. */
  delete(key: string): Promise<void>;
}

/** Encrypts stored tokens and sealed payloads (src/messaging/crypto.ts). */
export interface TokenCipher {
  /** AES-256-GCM with a fresh 12-byte IV: `v1:<iv>:<tag>:<ciphertext>`, base64url parts. */
  encrypt(plain: string): string;
  decrypt(stored: string): string;
  /** A keyed hash (HMAC-SHA256, key derived from the encryption key) for equality lookups. */
  keyedHash(value: string): string;
}

export type { SendPriority };

export interface QueuedSend {
  /** Our message id, sent as Meta's `biz_opaque_callback_data` (null for a reaction). */
  messageId: string | null;
  phoneNumberId: string;
  token: string;
  to: string;
  message: OutboundMessage;
  /** The number's `messages_per_second`. */
  limit: number;
  priority: SendPriority;
  /**
   * A campaign message's first try: its campaign is checked once more right
   * before the HTTP call (`campaignGoing`), so that a cancel or a pause stops
   * the sends claimed but not yet on the wire.
   */
  campaignId?: string | null;
}

export type SendResult =
  | { kind: "sent"; sent: SentMessage }
  | { kind: "error"; error: unknown }
  /** Never went out: the instance is closing, or it waited longer than `maxWaitMs` for a slot. */
  | { kind: "released" }
  /** Never went out: its campaign was cancelled or paused since the send was claimed. */
  | { kind: "withdrawn" };

/** An instance's outgoing sends, paced per number (src/sending/pipeline.ts). */
export interface SendPipeline {
  /** Resolves when Meta answered (or the send was released unsent); never rejects. */
  send(item: QueuedSend): Promise<SendResult>;
  /**
   * A customer-facing send for this number is on its way (its message is being
   * stored): when the number's lane is idle, its next slot is reserved now, so
   * that the send finds it ready instead of waiting for the store's round trip.
   * A slot reserved for a send that never comes is only a slot unused.
   */
  expect(phoneNumberId: string, limit: number): void;
  /** Waits until the pipeline has room for one more send of this priority (backpressure on jobs). */
  admit(priority: SendPriority): Promise<void>;
  /** Tracks work that follows a send's answer (recording it) so that close() waits for it too. */
  track(work: Promise<unknown>): void;
  /**
   * How long after it is handed over a send has surely ended here (answered,
   * timed out or released): its settle job is due no earlier than this plus the
   * unknown-outcome window.
   */
  readonly settleAfterMs: number;
  /** Sends waiting for a slot plus sends in flight. */
  size(): number;
  /** Nothing waiting, in flight or being recorded. */
  idle(): boolean;
  inFlight(): number;
  /** Releases the waiting sends, lets those in flight finish (and be recorded), at most `graceMs`. */
  close(graceMs?: number): Promise<void>;
}

/** The background jobs as tests and the benchmark see them (src/jobs/drain.ts). */
export interface Jobs {
  /**
   * Resolves once no job is due or running (future jobs, and jobs that have
   * used up their attempts, do not count). Tests and the benchmark wait on it.
   */
  drain(options?: { timeoutMs?: number }): Promise<void>;
  /**
   * This instance's own workers, when it runs them and they are running (set
   * by the composition root once they start): jobs it adds can start here at
   * once (see LocalStart).
   */
  local?: LocalStart;
}

/** A job taken from a named queue that its worker runs itself (src/jobs/follow-ups.ts). */
export type QueuedJob = {
  id: string;
  /** The task's name. */
  identifier: string;
  payload: Record<string, unknown> | null;
  attempts: number;
  max_attempts: number;
};

/** A job added already locked for this instance's workers (src/db/migrations/0025_jobs_started_here.sql). */
export type LocallyStartedJob = QueuedJob & { queue_id: number };

/**
 * An instance's workers taking the jobs the instance itself adds (the webhook's
 * deliveries): the statement that adds a job can lock it, and its queue, for
 * them, and they run it as soon as it is committed, with no worker's look-up
 * and no wake-up between the acknowledgement and the work (src/jobs/local-start.ts).
 */
export interface LocalStart {
  /** The worker the added jobs are locked for, and how many may start now; null: none may. */
  offer(): { workerId: string; max: number } | null;
  /** Runs jobs an adding statement locked for offer()'s worker, once that statement committed. */
  run(jobs: LocallyStartedJob[]): void;
}

/** A claimed message and where it goes. */
export interface ClaimedSend {
  accountId: string;
  type: string;
  text: string | null;
  payload: unknown;
  contactId: string | null;
  phone: string | null;
  waId: string | null;
  runStatus: string | null;
  awaiting: string | null;
  phoneNumberId: string | null;
  accessToken: string | null;
  limit: number | null;
  campaignId: string | null;
  /** No resend of an unknown outcome: the message never reached Meta if this try does not go. */
  firstTry: boolean;
}

/**
 * The transactions that take a contact's lock on a reply's hot path (a
 * customer message's advance, a bot send's record): several contacts' works
 * share one transaction, all written or none (src/flows/runner/store.ts,
 * createContactTransactions).
 */
export interface ContactTransactions {
  /** Runs `work` under the contact's lock in a transaction, like withContactLock. */
  run<T>(key: { accountId: string; contactId: string }, work: (db: DbOrTx) => Promise<T>): Promise<T>;
}

/**
 * Bot messages that the runner's advance stored claimed (with their settle
 * job), handed to this instance's send pipeline once the advance commits
 * (src/sending/outbound.ts); the runner reaches them through AppDeps so that
 * the send pipeline, which records a bot send through the runner, stays above it.
 */
export interface ClaimedSends {
  /** When the settle job of a send claimed now is due: after this instance is surely done with it, and the window. */
  settleDueAt(): Date;
  /** Hands the claimed message to the pipeline; never throws (the settle job resolves a lost one). */
  send(payload: SendPayload, claimed: ClaimedSend): Promise<void>;
}
