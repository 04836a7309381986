import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { requireAccount } from "../auth/session.js";
import { eventsPage } from "../contracts/account.js";
import type { AppDeps } from "../deps.js";
import { ApiError } from "../http/errors.js";
import { docs } from "../http/openapi.js";
import { parse } from "../http/validation.js";
import { endOfLog, positionOf, readEvents } from "./log.js";
import { EventStream } from "./stream.js";
import { EVENT_TYPES } from "./types.js";

const TAGS = ["events"];

const pageQuery = z.object({
  after: z
    .string()
    .min(1)
    .optional()
    .describe("Id of the last event you have; omit to start at the oldest kept"),
  limit: z.coerce
    .number({ error: "must be a whole number from 1 to 500" })
    .int("must be a whole number from 1 to 500")
    .min(1, "must be a whole number from 1 to 500")
    .max(500, "must be a whole number from 1 to 500")
    .default(100),
});
const streamQuery = z.object({
  last_event_id: z
    .string()
    .optional()
    .describe("Resume after this event (the `Last-Event-ID` header takes precedence)"),
});

const ABOUT =
  `Event types: ${EVENT_TYPES.map((t) => `\`${t}\``).join(", ")}. Each event is ` +
  "`{ id, type, created_at, data }`, `data` being the resource as the API shows it. Events are kept 7 days.";

/** The account event log: paged reads and the live Server-Sent Events stream. */
export function registerEventRoutes(app: FastifyInstance, deps: AppDeps) {
  const { db, sessions } = deps;
  // The open streams and whose each is: a revocation heard for that user (from any instance) re-checks it at once.
  const open = new Map<EventStream, string>();
  deps.revocations.subscribe((userId) => {
    for (const [stream, owner] of open) if (userId === null || owner === userId) void stream.recheck();
  });

  app.get(
    "/api/events",
    docs({
      account: true,
      tags: TAGS,
      summary: "The account's events, oldest first",
      description: `${ABOUT} Pass \`next_after\` back as \`after\` to read on.`,
      querystring: pageQuery,
      responses: {
        200: { description: "`{ events: [Event], next_after, has_more }`", body: eventsPage },
        400: "Bad limit, or `after` is not a kept event of the account",
      },
    }),
    async (request) => {
      const accountId = requireAccount(await sessions.require(request));
      const query = parse(pageQuery, request.query);
      const after = query.after ? await positionOf(db, accountId, query.after) : null;
      if (query.after && !after) {
        throw new ApiError(400, "after: unknown event id (events are kept for 7 days)");
      }
      const batch = await readEvents(db, { accountId, after, limit: query.limit });
      return {
        events: batch.events,
        next_after: batch.events.at(-1)?.id ?? query.after ?? null,
        has_more: batch.full || batch.waiting,
      };
    },
  );

  app.get(
    "/api/events/stream",
    docs({
      account: true,
      tags: TAGS,
      summary: "Live events of the account (Server-Sent Events)",
      description:
        `${ABOUT} Each event is sent as \`id: <event id>\` and \`data: <event JSON>\`; a comment line ` +
        "(`: heartbeat`) comes every 15 s. Reconnecting with `Last-Event-ID` (or `?last_event_id=`) first sends " +
        "every kept event after that one (400 when it is no kept event of the account); without it the stream starts now. " +
        "Changes made through any instance of the service arrive.",
      querystring: streamQuery,
      responses: {
        200: { description: "The events, as Server-Sent Events", contentType: "text/event-stream" },
        400: "`Last-Event-ID` (or `last_event_id`) is not a kept event of the account",
      },
    }),
    async (request, reply) => {
      const caller = await sessions.require(request);
      const accountId = requireAccount(caller);
      const query = parse(streamQuery, request.query);
      const header = request.headers["last-event-id"];
      const fromHeader = Array.isArray(header) ? header[0] : header;
      const lastId = fromHeader || query.last_event_id;
      const position = lastId ? await positionOf(db, accountId, lastId) : await endOfLog(db);
      // Like `after=` on GET /api/events: an id that is no kept event of the account (purged,
      // mistyped, another account's) is refused rather than guessed at.
      if (!position) {
        const name = fromHeader ? "Last-Event-ID" : "last_event_id";
        throw new ApiError(400, `${name}: unknown event id (events are kept for 7 days)`);
      }

      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-cache, no-transform",
        connection: "keep-alive",
        "x-accel-buffering": "no",
        "x-request-id": request.id,
      });
      res.write(": connected\n\n");
      const stream = new EventStream(
        res,
        {
          db,
          hub: deps.eventHub,
          accountId,
          position,
          heartbeatMs: deps.eventStreamHeartbeatMs,
          log: request.log,
          stillAllowed: async () => {
            try {
              return (await sessions.require(request)).accountId === accountId;
            } catch (error) {
              if (error instanceof ApiError && error.status === 401) return false;
              throw error;
            }
          },
        },
        (ended) => open.delete(ended),
      );
      // A client gone during authentication has its stream ended already.
      if (!res.destroyed) open.set(stream, caller.userId);
    },
  );

  // Open streams would keep the server from closing.
  app.addHook("preClose", async () => {
    for (const stream of [...open.keys()]) stream.end();
  });
}
