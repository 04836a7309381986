import type { FastifyBaseLogger } from "fastify";
import type { Config } from "./config.js";
import type { Database } from "./db/client.js";
import type { Mailer } from "./mail/mailer.js";
import type {
  ClaimedSends,
  ContactTransactions,
  DeliveryPolicy,
  EventHub,
  Jobs,
  MediaStore,
  Revocations,
  SendPipeline,
  Sessions,
  TokenCipher,
} from "./ports.js";
import type { GraphClient } from "./upstream/graph.js";

/**
 * What route modules, domain functions and background tasks get: the shared
 * services, built once per process by the composition root (app.ts). Features
 * import this module, never app.ts. It stands below every feature: it names
 * the services by their interfaces (ports.ts), never by a feature's module.
 */
export interface AppDeps {
  config: Config;
  db: Database["db"];
  pool: Database["pool"];
  sessions: Sessions;
  /** Ended sessions, deleted API keys and role changes, heard from every instance. */
  revocations: Revocations;
  cipher: TokenCipher;
  graph: GraphClient;
  /** This instance's upstream sends in flight, paced per number (src/sending). */
  sends: SendPipeline;
  /** Bot messages stored claimed by the runner, handed to \`sends\` once their advance commits. */
  claimedSends: ClaimedSends;
  /** The hot path's contact-locked transactions, several contacts to one (flows/runner/store.ts). */
  contactTransactions: ContactTransactions;
  /** Media files (customers' and our own copies of sent ones). */
  media: MediaStore;
  jobs: Jobs;
  /** Outgoing email (SMTP, or the development outbox); mails are queued (mail/queue.ts), never sent from a request. */
  mailer: Mailer;
  /** The process's logger (background tasks log through it). */
  log: FastifyBaseLogger;
  now: () => Date;
  /** This instance's LISTEN connection for the account event streams. */
  eventHub: EventHub;
  /** Comment sent on every open event stream this often. */
  eventStreamHeartbeatMs: number;
  /** Outbound webhook timeout, retries and disabling. */
  webhookDelivery: DeliveryPolicy;
}
