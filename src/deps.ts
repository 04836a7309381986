import type { FastifyBaseLogger } from "fastify";
import type { Sessions } from "./auth/session.js";
import type { Config } from "./config.js";
import type { Database } from "./db/client.js";
import type { Jobs } from "./jobs/drain.js";
import type { TokenCipher } from "./messaging/crypto.js";
import type { GraphClient } from "./upstream/graph.js";

/**
 * What route modules, domain functions and background tasks get: the shared
 * services, built once per process by the composition root (app.ts). Features
 * import this module, never app.ts.
 */
export interface AppDeps {
  config: Config;
  db: Database["db"];
  pool: Database["pool"];
  sessions: Sessions;
  cipher: TokenCipher;
  graph: GraphClient;
  jobs: Jobs;
  /** The process's logger (background tasks log through it). */
  log: FastifyBaseLogger;
  now: () => Date;
}
