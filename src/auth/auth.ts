import { betterAuth } from "better-auth";
import { drizzleAdapter } from "better-auth/adapters/drizzle";
import { APIError, createAuthMiddleware } from "better-auth/api";
import { bearer } from "better-auth/plugins";
import type { Config } from "../config.js";
import type { Db } from "../db/client.js";
import { authCredentials, profiles, sessions, users, verifications } from "../db/schema/index.js";
import { storableProblem } from "../http/input.js";

/** Longest accepted user fields (better-auth itself bounds only the password). */
const USER_FIELD_LIMITS: Array<[string, number]> = [
  ["name", 200],
  ["email", 320],
  ["image", 2048],
  ["password", 1024],
  ["newPassword", 1024],
  ["currentPassword", 1024],
];

export function createAuth(db: Db, config: Pick<Config, "publicUrl" | "authSecret" | "env">) {
  return betterAuth({
    appName: "wa-inbox",
    baseURL: config.publicUrl,
    basePath: "/api/auth",
    secret: config.authSecret,
    database: drizzleAdapter(db, {
      provider: "pg",
      schema: { users, sessions, auth_credentials: authCredentials, verifications },
    }),
    user: { modelName: "users" },
    session: { modelName: "sessions" },
    account: { modelName: "auth_credentials" },
    verification: { modelName: "verifications" },
    emailAndPassword: { enabled: true, autoSignIn: true, minPasswordLength: 8 },
    plugins: [bearer()],
    advanced: { database: { generateId: "uuid" } },
    // Our own limiter covers what needs one; better-auth's would key on IPs we may not see.
    rateLimit: { enabled: false },
    telemetry: { enabled: false },
    logger: { disabled: config.env === "test" },
    // The shared input policy (http/input.ts) for what better-auth stores about a user.
    hooks: {
      before: createAuthMiddleware(async (ctx) => {
        const body = ctx.body as Record<string, unknown> | undefined;
        if (!body || typeof body !== "object") return;
        for (const [field, max] of USER_FIELD_LIMITS) {
          const value = body[field];
          const problem = typeof value === "string" ? storableProblem(value, max) : null;
          if (problem) throw new APIError("BAD_REQUEST", { message: `${field}: ${problem}` });
        }
      }),
    },
    databaseHooks: {
      user: {
        create: {
          // Every user has a profile; it links to no account until they create or join one.
          after: async (user) => {
            await db.insert(profiles).values({ userId: user.id }).onConflictDoNothing();
          },
        },
      },
    },
  });
}

export type Auth = ReturnType<typeof createAuth>;
