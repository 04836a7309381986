import type { FastifyInstance } from "fastify";
import type { Auth } from "../auth/auth.js";
import type { Sessions } from "../auth/session.js";

/**
 * Mounts better-auth's handler at /api/auth/*. Its error answers
 * (`{ code, message }`) are rewritten to this API's `{ error }` shape, keeping
 * the code beside it.
 */
export function registerAuthProxy(app: FastifyInstance, auth: Auth, sessions: Sessions, publicUrl: string) {
  app.route({
    method: ["GET", "POST"],
    url: "/api/auth/*",
    schema: { hide: true },
    handler: async (request, reply) => {
      const headers = new Headers();
      for (const [name, value] of Object.entries(request.headers)) {
        if (value === undefined) continue;
        headers.set(name, Array.isArray(value) ? value.join(", ") : value);
      }
      // Bodies are JSON whatever Content-Type a client sent, or none (see app.ts).
      if (request.method === "POST") headers.set("content-type", "application/json");
      const body = request.method === "POST" && typeof request.body === "string" ? request.body : undefined;
      const response = await auth.handler(
        new Request(new URL(request.url, publicUrl), { method: request.method, headers, body }),
      );

      // Whatever ends or revokes sessions must not leave them alive in the session cache.
      if (request.method === "POST" && /\/(sign-out|revoke-|change-password|delete-user)/.test(request.url)) {
        sessions.forgetCredential(request.headers);
      }

      reply.code(response.status);
      for (const [name, value] of response.headers) {
        if (name === "set-cookie" || name === "content-length") continue;
        reply.header(name, value);
      }
      const cookies = response.headers.getSetCookie();
      if (cookies.length) reply.header("set-cookie", cookies);

      const text = await response.text();
      if (response.status < 400) return reply.send(text);
      let message = response.statusText || "Request failed";
      let code: string | undefined;
      try {
        const parsed = JSON.parse(text) as { message?: unknown; code?: unknown };
        if (typeof parsed.message === "string" && parsed.message) message = parsed.message;
        if (typeof parsed.code === "string") code = parsed.code;
      } catch {
        // Not JSON: keep the status text.
      }
      if (response.status === 401) message = "Unauthorized";
      return reply
        .header("content-type", "application/json; charset=utf-8")
        .send(JSON.stringify(code ? { error: message, code } : { error: message }));
    },
  });
}
