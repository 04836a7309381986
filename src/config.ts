import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { z } from "zod";

/** A per-user sliding budget such as "120/60s": `points` requests per `durationSeconds`. */
export interface RateLimitSetting {
  points: number;
  durationSeconds: number;
}

const rateLimit = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((value, ctx): RateLimitSetting => {
      const match = /^(\d+)\s*\/\s*(\d+)\s*(s|m|h)?$/.exec(value.trim());
      const points = match ? Number(match[1]) : 0;
      const unit = match?.[3] ?? "s";
      const seconds = match ? Number(match[2]) * (unit === "h" ? 3600 : unit === "m" ? 60 : 1) : 0;
      if (points < 1 || seconds < 1) {
        ctx.addIssue({ code: "custom", message: 'expected "<count>/<window>", for example "120/60s"' });
        return z.NEVER;
      }
      return { points, durationSeconds: seconds };
    });

const url = z.string().url();

/** `name@domain` or `Display name <name@domain>`, on one line. */
const MAIL_FROM_FORMAT = /^(?:[^<>\r\n]*<[^\s@<>]+@[^\s@<>]+\.[^\s@<>]+>|[^\s@<>]+@[^\s@<>]+\.[^\s@<>]+)$/;

/**
 * Outgoing email: through SMTP when `smtpUrl` is set; otherwise, outside
 * production, each mail is written to the log (the development outbox), and in
 * production it is not sent.
 */
export interface MailConfig {
  smtpUrl: string | undefined;
  from: string;
}

const schema = z.object({
  NODE_ENV: z.enum(["development", "production", "test"]).default("development"),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().min(1).default("127.0.0.1"),
  PUBLIC_URL: url.optional(),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, "must be a postgres:// or postgresql:// URL")
    .optional(),
  DATA_DIR: z.string().min(1).default("./data"),
  // Checked where it is used: an invalid key must not stop the server (spec).
  ENCRYPTION_KEY: z.string().optional(),
  AUTH_SECRET: z.string().min(32, "must be at least 32 characters").optional(),
  META_GRAPH_API_URL: url.default("https://graph.facebook.com"),
  META_GRAPH_API_VERSION: z
    .string()
    .regex(/^v\d+\.\d+$/, 'must look like "v25.0"')
    .default("v25.0"),
  META_APP_SECRET: z.string().min(1).optional(),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, "must be a redis:// or rediss:// URL")
    .optional(),
  REACT_RATE_LIMIT: rateLimit("120/60s"),
  SIGN_IN_RATE_LIMIT: rateLimit("10/15m"),
  SIGN_IN_IP_RATE_LIMIT: rateLimit("100/15m"),
  SIGN_IN_EMAIL_RATE_LIMIT: rateLimit("50/15m"),
  TRUSTED_ORIGINS: z
    .string()
    .default("")
    .transform((value, ctx) => {
      const origins: string[] = [];
      for (const item of value
        .split(",")
        .map((v) => v.trim())
        .filter(Boolean)) {
        const parsed = URL.canParse(item) ? new URL(item) : null;
        if (!parsed || !/^https?:$/.test(parsed.protocol)) {
          ctx.addIssue({ code: "custom", message: `"${item}" is not an http(s) origin` });
          return z.NEVER;
        }
        origins.push(parsed.origin);
      }
      return origins;
    }),
  TRUST_PROXY: z
    .string()
    .default("false")
    .transform((value): boolean | number | string => {
      const v = value.trim();
      if (v === "true" || v === "false") return v === "true";
      return /^\d+$/.test(v) ? Number(v) : v;
    }),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  WEBHOOK_ALLOW_PRIVATE: z.enum(["true", "false"], { error: 'must be "true" or "false"' }).default("false"),
  MEDIA_STORE: z.enum(["local", "s3"]).default("local"),
  S3_BUCKET: z.string().min(1).optional(),
  S3_REGION: z.string().min(1).optional(),
  S3_ENDPOINT: url.optional(),
  S3_ACCESS_KEY_ID: z.string().min(1).optional(),
  S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),
  WORKERS: z.enum(["true", "false"], { message: "must be true or false" }).default("true"),
  WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(8),
  SEND_UNKNOWN_WINDOW_S: z.coerce.number().int().min(1).max(86_400).default(120),
  SEND_MAX_IN_FLIGHT: z.coerce.number().int().min(1).max(4096).default(512),
  // Messages never repeat the value: the URL may carry the SMTP password.
  SMTP_URL: z
    .string()
    .refine((value) => /^smtps?:\/\//i.test(value) && URL.canParse(value), {
      message: "must be an smtp:// or smtps:// URL, for example smtps://user:password@smtp.example.com:465",
    })
    .optional(),
  MAIL_FROM: z
    .string()
    .trim()
    .refine((value) => MAIL_FROM_FORMAT.test(value), {
      message: 'must be an address such as "wa-inbox <no-reply@example.com>" or "no-reply@example.com"',
    })
    .optional(),
});

/** Where media files are kept: files under DATA_DIR/media, or an S3-compatible bucket. */
export type MediaStoreConfig =
  | { kind: "local"; dir: string }
  | {
      kind: "s3";
      bucket: string;
      region: string;
      endpoint: string | undefined;
      accessKeyId: string | undefined;
      secretAccessKey: string | undefined;
    };

export interface Config {
  env: "development" | "production" | "test";
  port: number;
  host: string;
  publicUrl: string;
  databaseUrl: string | undefined;
  dataDir: string;
  encryptionKey: string;
  authSecret: string;
  graphApiUrl: string;
  graphApiVersion: string;
  appSecret: string | undefined;
  redisUrl: string | undefined;
  reactRateLimit: RateLimitSetting;
  /**
   * Sign-in throttling (auth/sign-in-throttle.ts): failed attempts per (email,
   * client) pair before exponential back-off, capped at the window; failed
   * attempts per client address over all emails (refused beyond); failed
   * attempts per email from all clients (slowed, never refused, beyond).
   */
  signInRateLimit: RateLimitSetting;
  signInIpRateLimit: RateLimitSetting;
  signInEmailRateLimit: RateLimitSetting;
  /** Browser origins besides PUBLIC_URL that may use cookie sessions (a console's dev server). */
  trustedOrigins: string[];
  /** Fastify's trustProxy: whether (or which) proxies' X-Forwarded-For names the client. */
  trustProxy: boolean | number | string;
  logLevel: string;
  /** Outbound webhook URLs may use http and reach loopback or private addresses. */
  webhookAllowPrivate: boolean;
  mediaStore: MediaStoreConfig;
  /** Run background jobs in this instance (false: an API-only instance). */
  workers: boolean;
  /** Jobs one instance runs at once. */
  workerConcurrency: number;
  /** How long a send whose outcome is unknown waits for Meta's status naming it before it is sent once more. */
  sendUnknownWindowS: number;
  /** Upstream sends one instance keeps in flight at once (the keep-alive agent's sockets). */
  sendMaxInFlight: number;
  mail: MailConfig;
}

export class ConfigError extends Error {}

/** A secret that development generates once and keeps in DATA_DIR. */
type GeneratedSecret = "ENCRYPTION_KEY" | "AUTH_SECRET";

/**
 * Reads and validates the environment once. Empty strings count as unset.
 * Throws ConfigError naming the offending variable.
 */
export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  warn: (message: string) => void = (m) => console.warn(m),
): Config {
  const cleaned = Object.fromEntries(
    Object.entries(env).filter(([key, value]) => key in schema.shape && value !== ""),
  );
  const parsed = schema.safeParse(cleaned);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const name = String(issue?.path[0] ?? "environment");
    throw new ConfigError(`Invalid ${name}: ${issue?.message ?? "invalid value"}`);
  }
  const e = parsed.data;
  const dataDir = path.resolve(e.DATA_DIR);

  const secret = (name: GeneratedSecret, value: string | undefined, make: () => string) => {
    if (value) return value;
    if (e.NODE_ENV === "production") {
      throw new ConfigError(`Missing ${name}: it is required when NODE_ENV=production`);
    }
    return devSecret(dataDir, name, make, warn);
  };

  return {
    env: e.NODE_ENV,
    port: e.PORT,
    host: e.HOST,
    publicUrl: (e.PUBLIC_URL ?? `http://${e.HOST.includes(":") ? `[${e.HOST}]` : e.HOST}:${e.PORT}`).replace(
      /\/$/,
      "",
    ),
    databaseUrl: e.DATABASE_URL,
    dataDir,
    encryptionKey: secret("ENCRYPTION_KEY", e.ENCRYPTION_KEY, () => randomBytes(32).toString("hex")),
    authSecret: secret("AUTH_SECRET", e.AUTH_SECRET, () => randomBytes(32).toString("base64url")),
    graphApiUrl: e.META_GRAPH_API_URL.replace(/\/$/, ""),
    graphApiVersion: e.META_GRAPH_API_VERSION,
    appSecret: e.META_APP_SECRET,
    redisUrl: e.REDIS_URL,
    reactRateLimit: e.REACT_RATE_LIMIT,
    signInRateLimit: e.SIGN_IN_RATE_LIMIT,
    signInIpRateLimit: e.SIGN_IN_IP_RATE_LIMIT,
    signInEmailRateLimit: e.SIGN_IN_EMAIL_RATE_LIMIT,
    trustedOrigins: e.TRUSTED_ORIGINS,
    trustProxy: e.TRUST_PROXY,
    logLevel: e.LOG_LEVEL,
    webhookAllowPrivate: e.WEBHOOK_ALLOW_PRIVATE === "true",
    mediaStore: mediaStoreConfig(e, dataDir),
    workers: e.WORKERS === "true",
    workerConcurrency: e.WORKER_CONCURRENCY,
    sendUnknownWindowS: e.SEND_UNKNOWN_WINDOW_S,
    sendMaxInFlight: e.SEND_MAX_IN_FLIGHT,
    mail: mailConfig(e),
  };
}

function mailConfig(e: z.infer<typeof schema>): MailConfig {
  if (e.SMTP_URL && !e.MAIL_FROM)
    throw new ConfigError("Missing MAIL_FROM: it is required when SMTP_URL is set");
  return { smtpUrl: e.SMTP_URL, from: e.MAIL_FROM ?? "wa-inbox <no-reply@localhost.localdomain>" };
}

function mediaStoreConfig(e: z.infer<typeof schema>, dataDir: string): MediaStoreConfig {
  if (e.MEDIA_STORE === "local") return { kind: "local", dir: path.join(dataDir, "media") };
  if (!e.S3_BUCKET) throw new ConfigError("Missing S3_BUCKET: it is required when MEDIA_STORE=s3");
  if (Boolean(e.S3_ACCESS_KEY_ID) !== Boolean(e.S3_SECRET_ACCESS_KEY)) {
    throw new ConfigError("Invalid S3_ACCESS_KEY_ID: set it together with S3_SECRET_ACCESS_KEY, or neither");
  }
  return {
    kind: "s3",
    bucket: e.S3_BUCKET,
    region: e.S3_REGION ?? "us-east-1",
    endpoint: e.S3_ENDPOINT,
    accessKeyId: e.S3_ACCESS_KEY_ID,
    secretAccessKey: e.S3_SECRET_ACCESS_KEY,
  };
}

function devSecret(
  dataDir: string,
  name: GeneratedSecret,
  make: () => string,
  warn: (message: string) => void,
): string {
  const file = path.join(dataDir, "secrets", name.toLowerCase());
  if (existsSync(file)) return readFileSync(file, "utf8").trim();
  const value = make();
  // The data directory stays searchable (the embedded database's own user
  // needs to reach its cluster inside it); only the secrets folder is private.
  mkdirSync(dataDir, { recursive: true });
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  writeFileSync(file, `${value}\n`, { mode: 0o600, flag: "wx" });
  chmodSync(file, 0o600);
  warn(
    `${name} is not set: generated one for development and kept it in ${file}. Set ${name} in production.`,
  );
  return value;
}
