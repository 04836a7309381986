import type { FastifyInstance, FastifyRequest } from "fastify";
import { z } from "zod";
import { requireAccount, type Sessions } from "../auth/session.js";
import { okAnswer } from "../contracts/common.js";
import {
  activateAnswer,
  flowAnswer,
  flowsPage,
  flowTemplatesAnswer,
  flowWithNodes,
} from "../contracts/flows.js";
import type { Db } from "../db/client.js";
import { readJsonObject } from "../http/body.js";
import { ApiError, notFound } from "../http/errors.js";
import { storableString } from "../http/input.js";
import { docs } from "../http/openapi.js";
import { decodeCursor } from "../http/pagination.js";
import { parse } from "../http/validation.js";
import { checkNodeShapes, configProblem, NODE_KEY_MAX_LENGTH, NODE_TYPES } from "./nodes.js";
import {
  cloneTemplate,
  createFlow,
  deleteFlow,
  getFlow,
  getFlowWithNodesJson,
  listFlows,
  nodeDocument,
  replaceFlow,
  setFlowStatus,
} from "./service.js";
import { templateSummaries } from "./templates.js";
import { FLOW_STATUSES, TRIGGER_TYPES } from "./triggers.js";

export const NAME_MAX_LENGTH = 200;
export const DESCRIPTION_MAX_LENGTH = 5000;
export const LIST_LIMIT_MAX = 200;

const text = (max: number) => storableString({ max });

/** A JSON object (not an array or null) that Postgres can store. */
const jsonObject = z
  .custom<Record<string, unknown>>(
    (v) => v !== null && typeof v === "object" && !Array.isArray(v),
    "must be an object",
  )
  .superRefine((value, ctx) => {
    const problem = configProblem(value);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  });

const triggerType = z.enum(TRIGGER_TYPES, { error: `must be one of ${TRIGGER_TYPES.join(", ")}` });

const nodeDoc = z.object({
  node_key: z.string().min(1).max(NODE_KEY_MAX_LENGTH),
  node_type: z.enum(NODE_TYPES),
  config: z.record(z.string(), z.unknown()),
  position_x: z.number().optional(),
  position_y: z.number().optional(),
});

const createBody = z.object({
  name: text(NAME_MAX_LENGTH).optional(),
  description: text(DESCRIPTION_MAX_LENGTH).nullable().optional(),
  trigger_type: triggerType.optional(),
  trigger_config: jsonObject.optional(),
  template_slug: text(100).optional(),
});

const templateBody = z.object({
  template_slug: text(100),
  name: text(NAME_MAX_LENGTH).nullable().optional(),
});

const updateBody = z.object({
  name: text(NAME_MAX_LENGTH).optional(),
  description: text(DESCRIPTION_MAX_LENGTH).nullable().optional(),
  trigger_type: triggerType.optional(),
  trigger_config: jsonObject.optional(),
  entry_node_id: text(NODE_KEY_MAX_LENGTH).nullable().optional(),
  fallback_policy: jsonObject.optional(),
  nodes: z.array(nodeDoc).optional(),
});

const activateBody = z.object({
  status: z.enum(FLOW_STATUSES, { error: `must be one of ${FLOW_STATUSES.join(", ")}` }),
});

const listQuery = z.object({
  limit: z
    .string({ error: `must be a whole number from 1 to ${LIST_LIMIT_MAX}` })
    .regex(/^\d{1,4}$/, `must be a whole number from 1 to ${LIST_LIMIT_MAX}`)
    .transform(Number)
    .pipe(z.number().int().min(1).max(LIST_LIMIT_MAX, `must be a whole number from 1 to ${LIST_LIMIT_MAX}`))
    .optional(),
  cursor: z.string({ error: "must be a single value" }).optional(),
});

const idParams = z.object({ id: z.string().describe("Flow id (UUID)") });

/** Checks of the spec's wording that come before any other field check. */
function requireName(value: unknown, message: string): string {
  if (value === undefined || value === null) throw new ApiError(400, message);
  if (typeof value !== "string") throw new ApiError(400, "name: must be a string");
  if (value.trim() === "") throw new ApiError(400, message);
  return value.trim();
}

/**
 * PUT's body, checked in the spec's order (JSON, name, the other fields, the
 * nodes' shapes), as what replaceFlow writes: the fields to change, and the
 * nodes' document made at `now`, before the transaction: the flow row's lock
 * is not held while 500 nodes are stringified.
 */
function readFlowChange(request: FastifyRequest, flowId: string, now: Date) {
  const body = readJsonObject(request);
  if (body.name !== undefined) requireName(body.name, "name cannot be empty");
  const patch = parse(updateBody.omit({ nodes: true }), body);
  return {
    patch: { ...patch, ...(patch.name !== undefined && { name: patch.name.trim() }) },
    nodes:
      body.nodes === undefined
        ? undefined
        : nodeDocument(flowId, now.toISOString(), checkNodeShapes(body.nodes)),
  };
}

/**
 * The Postgres message of a storage failure, found through drizzle's wrapper
 * (whose own message carries the SQL and its parameters, never shown).
 */
export function storageMessage(error: unknown): string | null {
  for (
    let e = error, hops = 0;
    e && typeof e === "object" && hops < 5;
    e = (e as { cause?: unknown }).cause, hops++
  ) {
    const { code, severity, message } = e as { code?: unknown; severity?: unknown; message?: unknown };
    if (typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) && typeof severity === "string") {
      return typeof message === "string" && message ? message : "Storage error";
    }
  }
  return null;
}

export function registerFlowRoutes(
  app: FastifyInstance,
  deps: { db: Db; sessions: Sessions; now: () => Date },
) {
  app.register(async (scope) => {
    // Spec: storage failures answer 500 with the storage message.
    scope.setErrorHandler((error, request, reply) => {
      const message = storageMessage(error);
      if (!message) throw error;
      request.log.error({ err: error }, "flow storage failed");
      return reply.code(500).send({ error: message });
    });
    flowRoutes(scope, deps);
  });
}

function flowRoutes(app: FastifyInstance, deps: { db: Db; sessions: Sessions; now: () => Date }) {
  const { db, sessions } = deps;

  app.get(
    "/api/flows",
    docs({
      tags: ["flows"],
      summary: "The account's flows, newest first",
      description: `Without limit and cursor answers up to 1000 flows. \`limit\` (1-${LIST_LIMIT_MAX}) pages; pass \`next_cursor\` back as \`cursor\` for the next page (null at the end).`,
      querystring: z.object({
        limit: z.int().min(1).max(LIST_LIMIT_MAX).optional(),
        cursor: z.string().optional(),
      }),
      responses: {
        200: { description: "`{ flows: [Flow], next_cursor }`", body: flowsPage },
        400: "Bad limit or cursor",
      },
    }),
    async (request) => {
      const caller = await sessions.require(request);
      const query = parse(listQuery, request.query);
      const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
      if (!caller.accountId) return { flows: [], next_cursor: null };
      return listFlows(db, { accountId: caller.accountId, limit: query.limit, after });
    },
  );

  app.post(
    "/api/flows",
    docs({
      account: true,
      tags: ["flows"],
      summary: "Create a draft flow, empty or cloned from a template",
      description:
        "With a truthy `template_slug` the template's description, trigger and nodes are copied (body trigger fields and description are ignored; name defaults to the template's). Otherwise `name` is required.",
      body: createBody,
      responses: {
        201: { description: "`{ flow }`", body: flowAnswer },
        400: "Invalid JSON, name missing, unknown template_slug or a bad field",
      },
    }),
    async (request, reply) => {
      const caller = await sessions.require(request);
      const accountId = requireAccount(caller);
      const body = readJsonObject(request);
      if (body.template_slug) {
        const input = parse(templateBody, body);
        const name = input.name?.trim() || null;
        const flow = await cloneTemplate(db, {
          accountId,
          userId: caller.userId,
          slug: input.template_slug,
          name,
        });
        return reply.code(201).send({ flow });
      }
      const name = requireName(body.name, "name is required");
      const input = parse(createBody.omit({ template_slug: true }), body);
      const flow = await createFlow(db, {
        accountId,
        userId: caller.userId,
        name,
        description: input.description ?? null,
        triggerType: input.trigger_type ?? "keyword",
        triggerConfig: input.trigger_config ?? {},
      });
      return reply.code(201).send({ flow });
    },
  );

  app.get(
    "/api/flows/templates",
    docs({
      tags: ["flows"],
      summary: "Built-in templates to clone with POST /api/flows { template_slug }",
      responses: {
        200: {
          description: "`{ templates: [{ slug, name, description, trigger_type, node_count }] }`",
          body: flowTemplatesAnswer,
        },
      },
    }),
    async (request) => {
      await sessions.require(request);
      return { templates: templateSummaries() };
    },
  );

  app.get<{ Params: { id: string } }>(
    "/api/flows/:id",
    docs({
      tags: ["flows"],
      summary: "A flow with its nodes (in the order they were written)",
      params: idParams,
      responses: {
        200: { description: "`{ flow, nodes }`", body: flowWithNodes },
        404: "No such flow in the caller's account",
      },
    }),
    async (request, reply) => {
      const caller = await sessions.require(request);
      const body = caller.accountId
        ? await getFlowWithNodesJson(db, { accountId: caller.accountId, flowId: request.params.id })
        : null;
      if (!body) throw notFound();
      return reply.type("application/json; charset=utf-8").send(body);
    },
  );

  app.put<{ Params: { id: string } }>(
    "/api/flows/:id",
    docs({
      tags: ["flows"],
      summary: "Change a flow; `nodes` replaces all nodes at once",
      description:
        "Only supplied fields change; updated_at always moves. `nodes` replaces every node in one transaction (`[]` clears them; absent leaves them). Drafts may be incomplete: nodes are checked for shape only (node_key 1-100 characters and unique, known node_type, config an object nested at most 20 levels).",
      params: idParams,
      body: updateBody,
      responses: {
        200: { description: "`{ flow, nodes }`", body: flowWithNodes },
        400: "Invalid JSON, blank name or a bad field or node (named)",
        404: "No such flow in the caller's account",
      },
    }),
    async (request, reply) => {
      const caller = await sessions.require(request);
      const flowId = request.params.id;
      const accountId = caller.accountId;
      if (!accountId || !(await getFlow(db, { accountId, flowId }))) throw notFound();
      const now = deps.now();
      const { patch, nodes } = readFlowChange(request, flowId, now);
      const result = await replaceFlow(db, { accountId, flowId, patch, nodes, now });
      if (!result) throw notFound();
      return reply.type("application/json; charset=utf-8").send(result);
    },
  );

  app.delete<{ Params: { id: string } }>(
    "/api/flows/:id",
    docs({
      tags: ["flows"],
      summary: "Delete a flow with its nodes, runs and run events",
      params: idParams,
      responses: {
        200: { description: "`{ ok: true }`", body: okAnswer },
        404: "No such flow in the caller's account",
      },
    }),
    async (request) => {
      const caller = await sessions.require(request);
      const deleted = caller.accountId
        ? await deleteFlow(db, { accountId: caller.accountId, flowId: request.params.id })
        : false;
      if (!deleted) throw notFound();
      return { ok: true };
    },
  );

  app.post<{ Params: { id: string } }>(
    "/api/flows/:id/activate",
    docs({
      tags: ["flows"],
      summary: "Set a flow's status; `active` first validates the whole graph",
      description:
        "Issues are `{ severity, code, message, node_key? }`. Any `error` blocks activation (422); `warning`s (unreachable nodes, unknown placeholders) are returned with the flow.",
      params: idParams,
      body: activateBody,
      responses: {
        200: { description: "`{ flow, issues }`", body: activateAnswer },
        400: "Invalid JSON or an unknown status",
        404: "No such flow in the caller's account",
        422: "`{ error, issues }`: the graph has blocking issues",
      },
    }),
    async (request) => {
      const caller = await sessions.require(request);
      const flowId = request.params.id;
      const accountId = caller.accountId;
      if (!accountId || !(await getFlow(db, { accountId, flowId }))) throw notFound();
      const { status } = parse(activateBody, readJsonObject(request));
      const result = await setFlowStatus(db, { accountId, flowId, status, now: deps.now() });
      if (!result) throw notFound();
      return result;
    },
  );
}
