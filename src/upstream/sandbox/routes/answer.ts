/**
 * How every Graph API route answers: an injected fault first (a delay, a dropped connection,
 * an HTML page, an error), else the route's result as JSON with status 200. A route's handler
 * throws a GraphError to refuse; server.ts's error handler writes Meta's envelope.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { GraphError, unsupported } from "../graph-error.js";
import type { SandboxState } from "../state.js";

/** One field of a multipart body: text, or a file's bytes with its name and type. */
export interface FormValue {
  text?: string;
  bytes?: Buffer;
  filename?: string;
  contentType?: string;
}

/** What a Graph API handler gets: the object id and edge, the query, the parsed body and the bearer token. */
export interface GraphCall {
  method: string;
  /** The version prefix, e.g. v25.0 */
  version: string;
  objectId: string;
  query: Record<string, string>;
  /** JSON (whatever the content type), a Map of multipart fields, form fields, or raw text */
  body: unknown;
  token: string | undefined;
}

const VERSION = /^v\d+\.\d+$/;
export const VERSIONED = /^\/(v\d+\.\d+)(\/.*)?$/;

export const pathOf = (request: FastifyRequest) => new URL(request.url, "http://sandbox.invalid").pathname;
export const queryOf = (request: FastifyRequest) => (request.query ?? {}) as Record<string, string>;

export function bearer(header: string | undefined): string | undefined {
  const match = /^Bearer\s+(.+)$/i.exec(header ?? "");
  return match?.[1]?.trim();
}

export function asObject(body: unknown): Record<string, unknown> {
  return body !== null && typeof body === "object" && !Array.isArray(body)
    ? (body as Record<string, unknown>)
    : {};
}

const isReadReceipt = (body: unknown) => asObject(body).status === "read";

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function sendJson(reply: FastifyReply, status: number, body: unknown) {
  return reply.code(status).type("application/json; charset=UTF-8").send(JSON.stringify(body));
}

/** Answers the request with `run`'s result, unless an injected fault answers it first. */
export async function answer(
  state: SandboxState,
  request: FastifyRequest,
  reply: FastifyReply,
  run: () => unknown,
) {
  const fault = state.takeFault(request.method, pathOf(request), isReadReceipt(request.body));
  if (fault) {
    if (fault.delayMs) await sleep(fault.delayMs);
    if (fault.drop) return drop(request, reply);
    if (fault.dropAfterAccept) {
      try {
        run();
      } catch {
        // Refused: nothing was taken; the connection drops all the same.
      }
      return drop(request, reply);
    }
    if (fault.rawBody !== undefined) {
      return reply
        .code(fault.status ?? 500)
        .type("text/html; charset=utf-8")
        .send(fault.rawBody);
    }
    if (fault.error || fault.status) {
      const status = fault.status ?? 400;
      throw new GraphError({
        status,
        code: fault.error?.code ?? (status >= 500 ? 2 : 100),
        message:
          fault.error?.message ??
          (status >= 500 ? "Service temporarily unavailable" : "(#100) Invalid parameter"),
        type: fault.error?.type,
        subcode: fault.error?.error_subcode,
      });
    }
  }
  return sendJson(reply, 200, run());
}

function drop(request: FastifyRequest, reply: FastifyReply) {
  reply.hijack();
  request.raw.socket.destroy();
}

/**
 * Registers a Graph API route on `/{version}/{id}` plus `edge`; a path whose first segment is
 * not a version is refused as Meta does (unsupported request).
 */
export function graphRoute(
  app: FastifyInstance,
  state: SandboxState,
  method: "GET" | "POST",
  edge: string | undefined,
  handler: (call: GraphCall) => unknown,
) {
  const url = edge === undefined ? "/:version/:objectId" : `/:version/:objectId/${edge}`;
  app.route({
    method,
    url,
    exposeHeadRoute: false,
    handler: (request, reply) =>
      answer(state, request, reply, () => {
        const { version, objectId } = request.params as { version: string; objectId: string };
        if (!VERSION.test(version)) throw unsupported(method, pathOf(request));
        return handler({
          method,
          version,
          objectId,
          query: queryOf(request),
          body: request.body,
          token: bearer(request.headers.authorization),
        });
      }),
  });
}
