import { randomUUID } from "node:crypto";
import { and, desc, eq, getTableColumns, sql } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import type { z } from "zod";
import type { Flow } from "../contracts/flows.js";
import type { Db, DbOrTx } from "../db/client.js";
import { inlineTimestamp, jsonColumnsSql } from "../db/json-sql.js";
import { flowGraphs, flows, type StoredNode } from "../db/schema/index.js";
import { ApiError } from "../http/errors.js";
import { isUuid } from "../http/ids.js";
import { encodeCursor, type Position } from "../http/pagination.js";
import { templateCatalog } from "../templates/service.js";
import { nodeModule } from "./node-types/index.js";
import type { NodeInput } from "./nodes.js";
import { findTemplate } from "./templates.js";
import type { FlowStatus, TriggerType } from "./triggers.js";
import { hasBlockingIssues, type ValidationIssue, validateFlowGraph } from "./validate.js";

type FlowRow = typeof flows.$inferSelect;

/** The flow's runs started: its own column plus its rows in flow_execution_counts. */
const executionCountSql = (flow: string) =>
  `(${flow}.execution_count + coalesce((select sum(c.count) from flow_execution_counts c where c.flow_id = ${flow}.id), 0))::int`;

/** Every column of a flow, execution_count counted: for rows that become API objects. */
const flowFields = {
  ...getTableColumns(flows),
  executionCount: sql<number>`${sql.raw(executionCountSql('"flows"'))}`,
};

/** The one place flow rows become API objects (snake_case on the wire). */
export function toFlowJson(row: FlowRow): z.infer<typeof Flow> {
  return {
    id: row.id,
    account_id: row.accountId,
    user_id: row.userId,
    name: row.name,
    description: row.description,
    status: row.status,
    trigger_type: row.triggerType,
    trigger_config: row.triggerConfig,
    entry_node_id: row.entryNodeId,
    fallback_policy: row.fallbackPolicy,
    execution_count: row.executionCount,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  };
}

/**
 * The one place nodes become API objects, as PUT and the templates write them
 * to flow_graphs: each a new node, with a new id (the spec's "existing nodes
 * are deleted and the supplied nodes inserted").
 */
export function toNodeJson(flowId: string, createdAt: string, node: NodeInput): StoredNode {
  return {
    id: randomUUID(),
    flow_id: flowId,
    node_key: node.node_key,
    node_type: node.node_type,
    config: node.config,
    position_x: node.position_x,
    position_y: node.position_y,
    created_at: createdAt,
  };
}

export type FlowJson = ReturnType<typeof toFlowJson>;
export type NodeJson = StoredNode;

/** Without a limit a list answers at most this many flows. */
export const DEFAULT_LIST_LIMIT = 1000;

export async function listFlows(db: Db, input: { accountId: string; limit?: number; after?: Position }) {
  const limit = input.limit ?? DEFAULT_LIST_LIMIT;
  const rows = await db
    .select(flowFields)
    .from(flows)
    .where(
      and(
        eq(flows.accountId, input.accountId),
        input.after
          ? sql`(${flows.createdAt}, ${flows.id}) < (${input.after.at}, ${input.after.id})`
          : undefined,
      ),
    )
    .orderBy(desc(flows.createdAt), desc(flows.id))
    .limit(limit + 1);
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    flows: page.map(toFlowJson),
    next_cursor: rows.length > limit && last ? encodeCursor({ at: last.createdAt, id: last.id }) : null,
  };
}

/** The flow when it exists in the account; ids that are not UUIDs match nothing. */
export async function getFlow(db: DbOrTx, input: { accountId: string; flowId: string }) {
  if (!isUuid(input.flowId)) return null;
  const [row] = await db
    .select()
    .from(flows)
    .where(and(eq(flows.id, input.flowId), eq(flows.accountId, input.accountId)));
  return row ?? null;
}

/** The flow's nodes in the order they were written ([] for a flow never given any). */
export async function nodesOf(db: DbOrTx, flowId: string): Promise<NodeJson[]> {
  const [row] = await db
    .select({ nodes: flowGraphs.nodes })
    .from(flowGraphs)
    .where(eq(flowGraphs.flowId, flowId));
  return row?.nodes ?? [];
}

/**
 * `{ flow, nodes }` built by PostgreSQL in one statement: the flow in the same
 * shape as toFlowJson (its SQL is read back from it: src/db/json-sql.ts), the
 * nodes as flow_graphs keeps them (already the API's text). The hottest read
 * (GET /api/flows/{id}), without mapping and serialising rows here.
 */
const FLOW_JSON_SQL = sql.raw(
  jsonColumnsSql(flows, "f", (f) => toFlowJson(f as FlowRow), {
    timestamp: inlineTimestamp,
    computed: { execution_count: executionCountSql("f") },
  }).join(", "),
);
// The flow is row_to_json of a one-row select named by the serializer's fields.
const flowWithNodesSql = (flowId: string, accountId: string) => sql`
  select json_build_object(
    'flow', (select row_to_json(j) from (select ${FLOW_JSON_SQL}) j),
    'nodes', coalesce((select g.nodes from flow_graphs g where g.flow_id = f.id), '[]'::json)
  )::text as body
  from flows f where f.id = ${flowId} and f.account_id = ${accountId}`;

// The read runs as a named prepared statement (planned once per connection):
// the same SQL rendered once, its two parameters in the same order.
const FLOW_WITH_NODES_TEXT = new PgDialect().sqlToQuery(flowWithNodesSql("", "")).sql;

/** `{ flow, nodes }` as JSON text, or null when the flow is not in the account. */
export async function getFlowWithNodesJson(
  db: Db,
  input: { accountId: string; flowId: string },
): Promise<string | null> {
  if (!isUuid(input.flowId)) return null;
  const { rows } = await db.$client.query<{ body: string }>({
    name: "flow-with-nodes",
    text: FLOW_WITH_NODES_TEXT,
    values: [input.flowId, input.accountId],
  });
  return rows[0]?.body ?? null;
}

/**
 * The nodes' document as flow_graphs keeps it and the API answers it: each a
 * new node written at `createdAt` (toNodeJson), in the order given, as UTF-8
 * bytes. A 500-node document is a string of over 128 kB, which V8 keeps among
 * its large objects: alive across a PUT's round trips, it moved to the old
 * generation at the first young collection and stayed until a full one. Made
 * into bytes at once, the string dies young; the Buffer is sent as it is to
 * PostgreSQL (a binary parameter, which `json` reads as text) and into the answer.
 */
export const nodeDocument = (flowId: string, createdAt: string, nodes: NodeInput[]) =>
  Buffer.from(JSON.stringify(nodes.map((n) => toNodeJson(flowId, createdAt, n))));

/** Replaces the flow's nodes with this document (nodeDocument): one row whatever their number. */
async function writeNodes(tx: DbOrTx, flowId: string, document: Buffer) {
  await tx.execute(sql`
    insert into ${flowGraphs} (flow_id, nodes) values (${flowId}, ${document}::json)
    on conflict (flow_id) do update set nodes = excluded.nodes`);
}

export async function createFlow(
  db: Db,
  input: {
    accountId: string;
    userId: string;
    name: string;
    description: string | null;
    triggerType: TriggerType;
    triggerConfig: Record<string, unknown>;
  },
) {
  const [row] = await db
    .insert(flows)
    .values({
      accountId: input.accountId,
      userId: input.userId,
      name: input.name,
      description: input.description,
      status: "draft",
      triggerType: input.triggerType,
      triggerConfig: input.triggerConfig,
    })
    .returning();
  if (!row) throw new Error("flow insert returned nothing");
  return toFlowJson(row);
}

/**
 * A draft copy of a built-in template: the flow and its nodes in one
 * transaction, so a failed node insert leaves no flow behind.
 */
export async function cloneTemplate(
  db: Db,
  input: { accountId: string; userId: string; slug: string; name: string | null },
) {
  const template = findTemplate(input.slug);
  if (!template) throw new ApiError(400, `Unknown template_slug "${input.slug}"`);
  return db.transaction(async (tx) => {
    const [row] = await tx
      .insert(flows)
      .values({
        accountId: input.accountId,
        userId: input.userId,
        name: input.name ?? template.name,
        description: template.description,
        status: "draft",
        triggerType: template.trigger_type,
        triggerConfig: structuredClone(template.trigger_config),
        entryNodeId: template.entry_node_id,
      })
      .returning();
    if (!row) throw new Error("flow insert returned nothing");
    if (template.nodes.length > 0) {
      await writeNodes(tx, row.id, nodeDocument(row.id, row.createdAt.toISOString(), template.nodes));
    }
    return toFlowJson(row);
  });
}

export interface FlowPatch {
  name?: string;
  description?: string | null;
  trigger_type?: TriggerType;
  trigger_config?: Record<string, unknown>;
  entry_node_id?: string | null;
  fallback_policy?: Record<string, unknown>;
}

const CLOSE_BRACE = Buffer.from("}");

/**
 * PUT: changes the supplied fields, always moves updated_at (to `now`), and
 * when `nodes` is given (a nodeDocument made at `now`) replaces every node.
 * Answers the new `{ flow, nodes }` as JSON (bytes, the nodes the very bytes
 * written, when nodes were given). One transaction holding the flow row's lock, so concurrent
 * replacements apply one after the other and a failure keeps the previous
 * state whole. Null when the flow is gone (or was never visible).
 */
export async function replaceFlow(
  db: Db,
  input: { accountId: string; flowId: string; patch: FlowPatch; nodes?: Buffer; now: Date },
): Promise<string | Buffer | null> {
  if (!isUuid(input.flowId)) return null;
  return db.transaction(async (tx) => {
    const { patch } = input;
    // The UPDATE takes the row's lock: a concurrent PUT waits here until this one commits.
    const [row] = await tx
      .update(flows)
      .set({
        ...(patch.name !== undefined && { name: patch.name }),
        ...(patch.description !== undefined && { description: patch.description }),
        ...(patch.trigger_type !== undefined && { triggerType: patch.trigger_type }),
        ...(patch.trigger_config !== undefined && { triggerConfig: patch.trigger_config }),
        ...(patch.entry_node_id !== undefined && { entryNodeId: patch.entry_node_id }),
        ...(patch.fallback_policy !== undefined && { fallbackPolicy: patch.fallback_policy }),
        updatedAt: input.now,
      })
      .where(and(eq(flows.id, input.flowId), eq(flows.accountId, input.accountId)))
      .returning(flowFields);
    if (!row) return null;
    if (input.nodes === undefined) {
      const { rows } = await tx.execute<{ body: string }>(flowWithNodesSql(row.id, input.accountId));
      return rows[0]?.body ?? null;
    }
    await writeNodes(tx, row.id, input.nodes);
    const flow = Buffer.from(`{"flow":${JSON.stringify(toFlowJson(row))},"nodes":`);
    return Buffer.concat([flow, input.nodes, CLOSE_BRACE]);
  });
}

/** Deletes the flow; nodes, runs and run events go by cascade. False when not visible. */
export async function deleteFlow(db: Db, input: { accountId: string; flowId: string }) {
  if (!isUuid(input.flowId)) return false;
  const deleted = await db
    .delete(flows)
    .where(and(eq(flows.id, input.flowId), eq(flows.accountId, input.accountId)))
    .returning({ id: flows.id });
  return deleted.length > 0;
}

/**
 * Moves a flow to a status. `active` first validates the graph as stored, under
 * the flow row's lock so a concurrent PUT cannot slip an unchecked graph in:
 * blocking issues answer 422 `{ error, issues }`; warnings come back with the flow.
 */
export async function setFlowStatus(
  db: Db,
  input: { accountId: string; flowId: string; status: FlowStatus; now: Date },
): Promise<{ flow: FlowJson; issues: ValidationIssue[] } | null> {
  if (!isUuid(input.flowId)) return null;
  return db.transaction(async (tx) => {
    const [flow] = await tx
      .select()
      .from(flows)
      .where(and(eq(flows.id, input.flowId), eq(flows.accountId, input.accountId)))
      .for("update");
    if (!flow) return null;
    let issues: ValidationIssue[] = [];
    if (input.status === "active") {
      const nodes = await nodesOf(tx, flow.id);
      issues = validateFlowGraph({
        trigger_type: flow.triggerType,
        trigger_config: flow.triggerConfig,
        entry_node_id: flow.entryNodeId,
        fallback_policy: flow.fallbackPolicy,
        nodes,
        templates: nodes.some((n) => nodeModule(n.node_type)?.usesTemplates)
          ? await templateCatalog(tx, input.accountId)
          : undefined,
      });
      if (hasBlockingIssues(issues)) {
        const count = issues.filter((i) => i.severity === "error").length;
        throw new ApiError(
          422,
          `The flow cannot be activated: ${count} blocking issue${count === 1 ? "" : "s"}`,
          {
            issues,
          },
        );
      }
    }
    const [row] = await tx
      .update(flows)
      .set({ status: input.status, updatedAt: input.now })
      .where(and(eq(flows.id, flow.id), eq(flows.accountId, input.accountId)))
      .returning(flowFields);
    if (!row) return null;
    return { flow: toFlowJson(row), issues };
  });
}
