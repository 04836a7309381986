import { and, asc, desc, eq, sql } from "drizzle-orm";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { requireAccount } from "../../auth/session.js";
import {
  type FlowRun,
  type FlowRunEvent,
  runAnswer,
  runsPage,
  runWithEvents,
} from "../../contracts/flows.js";
import type { Db } from "../../db/client.js";
import { contacts, flowRunEvents, flowRuns } from "../../db/schema/index.js";
import type { AppDeps } from "../../deps.js";
import { readJsonObject } from "../../http/body.js";
import { ApiError, notFound } from "../../http/errors.js";
import { isUuid } from "../../http/ids.js";
import { docs } from "../../http/openapi.js";
import { decodeCursor, encodeCursor } from "../../http/pagination.js";
import { parse } from "../../http/validation.js";
import { getFlow } from "../service.js";
import { startManualRun } from "./dispatch.js";
import type { RunEventRow, RunRow } from "./store.js";

/** The one place run rows become API objects. */
export const toRunJson = (r: RunRow): z.infer<typeof FlowRun> => ({
  id: r.id,
  flow_id: r.flowId,
  account_id: r.accountId,
  contact_id: r.contactId,
  conversation_id: r.conversationId,
  status: r.status,
  current_node_key: r.currentNodeKey,
  vars: r.vars,
  reprompt_count: r.repromptCount,
  end_reason: r.endReason,
  started_at: r.startedAt,
  last_activity_at: r.lastActivityAt,
  ended_at: r.endedAt,
});

export const toRunEventJson = (e: RunEventRow): z.infer<typeof FlowRunEvent> => ({
  id: String(e.id),
  run_id: e.runId,
  event_type: e.eventType,
  node_key: e.nodeKey,
  payload: e.payload,
  created_at: e.createdAt,
});

const pageQuery = z.object({
  limit: z.coerce
    .number({ error: "must be a whole number from 1 to 200" })
    .int("must be a whole number from 1 to 200")
    .min(1, "must be a whole number from 1 to 200")
    .max(200, "must be a whole number from 1 to 200")
    .default(50),
  cursor: z.string({ error: "must be a single value" }).min(1).optional(),
});
const flowParams = z.object({ id: z.string().describe("Flow id (UUID)") });
const runParams = flowParams.extend({ run_id: z.string().describe("Run id (UUID)") });
const startBody = z.object({ contact_id: z.string({ error: "is required" }).describe("Contact id (UUID)") });

const TAGS = ["flow runs"];

export function registerRunRoutes(
  app: FastifyInstance,
  deps: AppDeps,
  limit: <T>(work: () => Promise<T>) => Promise<T>,
) {
  const { db, sessions } = deps;

  /** The flow when the caller's account owns it; everyone else gets 404. */
  const visibleFlow = async (accountId: string | null, flowId: string) => {
    const flow = accountId ? await getFlow(db, { accountId, flowId }) : null;
    if (!flow) throw notFound();
    return flow;
  };

  app.get(
    "/api/flows/:id/runs",
    docs({
      tags: TAGS,
      summary: "The flow's runs, newest first",
      description:
        "Pages with `limit` (1-200, default 50) and `cursor` (pass back `next_cursor`; null at the end).",
      params: flowParams,
      querystring: pageQuery,
      responses: {
        200: { description: "`{ runs: [Run], next_cursor }`", body: runsPage },
        400: "Bad limit or cursor",
        404: "Not found",
      },
    }),
    async (request) => {
      const caller = await sessions.require(request);
      const { id } = request.params as { id: string };
      const flow = await visibleFlow(caller.accountId, id);
      const query = parse(pageQuery, request.query);
      const after = query.cursor ? decodeCursor(query.cursor) : null;
      return listRuns(db, { flowId: flow.id, limit: query.limit, after });
    },
  );

  app.get(
    "/api/flows/:id/runs/:run_id",
    docs({
      tags: TAGS,
      summary: "One run with its events in the order they happened",
      params: runParams,
      responses: {
        200: { description: "`{ run: Run, events: [RunEvent] }`", body: runWithEvents },
        404: "Not found",
      },
    }),
    async (request) => {
      const caller = await sessions.require(request);
      const params = request.params as { id: string; run_id: string };
      const flow = await visibleFlow(caller.accountId, params.id);
      if (!isUuid(params.run_id)) throw notFound();
      const [run] = await db
        .select()
        .from(flowRuns)
        .where(and(eq(flowRuns.id, params.run_id), eq(flowRuns.flowId, flow.id)));
      if (!run) throw notFound();
      const events = await db
        .select()
        .from(flowRunEvents)
        .where(eq(flowRunEvents.runId, run.id))
        .orderBy(asc(flowRunEvents.id));
      return { run: toRunJson(run), events: events.map(toRunEventJson) };
    },
  );

  app.post(
    "/api/flows/:id/runs",
    docs({
      account: true,
      tags: TAGS,
      summary: "Start the flow for a contact (manual start)",
      description:
        "Any active flow can be started this way; it is the only way a `manual` flow starts. The run walks from the entry node until it waits for the customer or ends, and comes back as it is then.",
      params: flowParams,
      body: startBody,
      responses: {
        201: { description: "`{ run: Run }`", body: runAnswer },
        400: "Invalid JSON or contact_id missing",
        404: "Flow or contact not found in the caller's account",
        409: "The contact already has an active run",
        422: 'The flow is not active, or the contact has opted out (`code: "opted_out"`)',
      },
    }),
    async (request, reply) => {
      const caller = await sessions.require(request);
      const accountId = requireAccount(caller);
      const { id } = request.params as { id: string };
      const flow = await visibleFlow(accountId, id);
      const body = parse(startBody, readJsonObject(request));
      if (!(await contactExists(db, accountId, body.contact_id)))
        throw new ApiError(404, "Contact not found");
      const run = await limit(() =>
        startManualRun(deps, {
          accountId,
          flowId: flow.id,
          contactId: body.contact_id,
          userId: caller.userId,
        }),
      );
      return reply.code(201).send({ run: toRunJson(run) });
    },
  );
}

async function contactExists(db: Db, accountId: string, contactId: string) {
  if (!isUuid(contactId)) return false;
  const [row] = await db
    .select({ id: contacts.id })
    .from(contacts)
    .where(and(eq(contacts.id, contactId), eq(contacts.accountId, accountId)));
  return row !== undefined;
}

async function listRuns(
  db: Db,
  input: { flowId: string; limit: number; after: { at: Date; id: string } | null },
) {
  const rows = await db
    .select()
    .from(flowRuns)
    .where(
      and(
        eq(flowRuns.flowId, input.flowId),
        input.after
          ? sql`(${flowRuns.startedAt}, ${flowRuns.id}) < (${input.after.at.toISOString()}::timestamptz, ${input.after.id}::uuid)`
          : undefined,
      ),
    )
    .orderBy(desc(flowRuns.startedAt), desc(flowRuns.id))
    .limit(input.limit + 1);
  const page = rows.slice(0, input.limit);
  const last = page.at(-1);
  return {
    runs: page.map(toRunJson),
    next_cursor: rows.length > input.limit && last ? encodeCursor({ at: last.startedAt, id: last.id }) : null,
  };
}
