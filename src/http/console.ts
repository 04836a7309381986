import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import fastifyStatic from "@fastify/static";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";

/**
 * The web console (console/, built by Vite into console/dist) served at `/`.
 * Hashed assets are immutable and cached for a year; index.html is never
 * cached, so a new build reaches browsers on their next load. Unknown GET
 * paths outside the API that ask for HTML get index.html (the console routes
 * in the browser); everything else keeps the API's JSON 404.
 */

/** console/dist, from src/http (tsx) and dist/http (compiled) alike. */
export const DEFAULT_CONSOLE_DIR = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  "../../console/dist",
);

const NOT_BUILT =
  "<!doctype html><title>wa-inbox</title><p>The web console is not built. Run <code>npm run build</code> (or <code>npm start</code>, which builds it) and reload.</p>";

/** Paths that belong to the API or its documentation, never to the console. */
const isServicePath = (url: string) =>
  url === "/api" ||
  url.startsWith("/api/") ||
  url.startsWith("/api?") ||
  url === "/docs" ||
  url.startsWith("/docs/") ||
  url.startsWith("/docs?");

export async function registerConsole(app: FastifyInstance, dir: string = DEFAULT_CONSOLE_DIR) {
  const indexPath = path.join(dir, "index.html");
  const built = existsSync(indexPath);
  // Read once: index.html changes only with a new build, which comes with a restart.
  const indexHtml = built ? readFileSync(indexPath) : Buffer.from(NOT_BUILT);

  const sendIndex = (reply: FastifyReply) =>
    reply
      .code(built ? 200 : 503)
      .header("cache-control", "no-cache")
      .header("x-content-type-options", "nosniff")
      .type("text/html; charset=utf-8")
      .send(indexHtml);

  app.get("/", { schema: { hide: true } }, (_request, reply) => sendIndex(reply));
  app.get("/index.html", { schema: { hide: true } }, (_request, reply) => sendIndex(reply));

  const assets = path.join(dir, "assets");
  if (built && existsSync(assets)) {
    await app.register(fastifyStatic, {
      root: assets,
      prefix: "/assets/",
      // One route per built file, found at start-up: no catch-all beside the API.
      wildcard: false,
      index: false,
      schemaHide: true,
      // File names carry their content hash: a name never changes its bytes.
      immutable: true,
      maxAge: 365 * 24 * 3600 * 1000,
      cacheControl: true,
    });
  }

  return {
    /** The not-found handler's part: true when it answered with the console's page. */
    serveFallback(request: FastifyRequest, reply: FastifyReply): boolean {
      if (request.method !== "GET" && request.method !== "HEAD") return false;
      if (isServicePath(request.url)) return false;
      if (request.url.startsWith("/assets/")) return false;
      if (!(request.headers.accept ?? "").includes("text/html")) return false;
      sendIndex(reply);
      return true;
    },
  };
}
