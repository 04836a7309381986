import type { FastifyInstance } from "fastify";
import type { TestApp, TestUser } from "../helpers/harness.js";

/** The test config's PUBLIC_URL origin, and its loopback twin. */
export const OWN_ORIGIN = "http://127.0.0.1:3000";
export const TWIN_ORIGIN = "http://localhost:3000";
export const FOREIGN_ORIGIN = "https://evil.example";

/** Headers a browser adds to a fetch() from `origin` to this service. */
export function browserHeaders(origin: string): Record<string, string> {
  const site = origin === OWN_ORIGIN || origin === TWIN_ORIGIN ? "same-origin" : "cross-site";
  return { origin, "sec-fetch-site": site, "sec-fetch-mode": "cors", "sec-fetch-dest": "empty" };
}

/** Listens on a free loopback port; returns the base URL. */
export async function listen(t: TestApp): Promise<string> {
  await t.app.listen({ port: 0, host: "127.0.0.1" });
  const address = t.app.server.address();
  if (!address || typeof address === "string") throw new Error("no address");
  return `http://127.0.0.1:${address.port}`;
}

/** Signs the user in again and returns the session cookie (name=value). */
export async function sessionCookie(app: FastifyInstance, user: TestUser): Promise<string> {
  const response = await app.inject({
    method: "POST",
    url: "/api/auth/sign-in/email",
    payload: { email: user.email, password: "correct horse battery" },
  });
  if (response.statusCode !== 200) throw new Error(`sign-in failed: ${response.body}`);
  const cookie = String(response.headers["set-cookie"]).split(";")[0] ?? "";
  if (!cookie.includes("session_token=")) throw new Error("no session cookie");
  return cookie;
}

/** Creates an API key as the owner; returns the key and its id. */
export async function createKey(app: FastifyInstance, owner: TestUser, body: Record<string, unknown> = {}) {
  const response = await app.inject({
    method: "POST",
    url: "/api/api-keys",
    headers: owner.headers,
    payload: { name: "CRM sync", ...body },
  });
  if (response.statusCode !== 201) throw new Error(`api key create failed: ${response.body}`);
  const json = response.json() as { api_key: { id: string }; key: string };
  return { id: json.api_key.id, key: json.key, json };
}
