import { z } from "zod";
import { jsonObject, nextCursor, timestamp } from "./common.js";

export const Flow = z
  .object({
    id: z.uuid(),
    account_id: z.uuid(),
    user_id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    status: z.enum(["draft", "active", "archived"]),
    trigger_type: z.enum(["keyword", "first_inbound_message", "manual"]),
    trigger_config: jsonObject,
    entry_node_id: z.string().nullable(),
    fallback_policy: jsonObject,
    execution_count: z.number().int(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: "Flow" });

export const Node = z
  .object({
    id: z.uuid(),
    flow_id: z.uuid(),
    node_key: z.string(),
    node_type: z.string(),
    config: jsonObject,
    position_x: z.number(),
    position_y: z.number(),
    created_at: timestamp,
  })
  .meta({ id: "Node" });

export const ValidationIssue = z
  .object({
    severity: z.enum(["error", "warning"]),
    code: z.string(),
    message: z.string(),
    node_key: z.string().optional(),
  })
  .meta({ id: "ValidationIssue" });

export const FlowRun = z
  .object({
    id: z.uuid(),
    flow_id: z.uuid(),
    account_id: z.uuid(),
    contact_id: z.uuid(),
    conversation_id: z.uuid().nullable(),
    status: z.enum(["active", "completed", "handed_off", "timed_out", "failed"]),
    current_node_key: z.string().nullable(),
    vars: jsonObject,
    reprompt_count: z.number().int(),
    end_reason: z.string().nullable(),
    started_at: timestamp,
    last_activity_at: timestamp,
    ended_at: timestamp.nullable(),
  })
  .meta({ id: "FlowRun" });

export const FlowRunEvent = z
  .object({
    id: z.string(),
    run_id: z.uuid(),
    event_type: z.string(),
    node_key: z.string().nullable(),
    payload: jsonObject,
    created_at: timestamp,
  })
  .meta({ id: "FlowRunEvent" });

export const flowAnswer = z.object({ flow: Flow });
export const flowsPage = z.object({ flows: z.array(Flow), next_cursor: nextCursor });
export const flowWithNodes = z.object({ flow: Flow, nodes: z.array(Node) });
export const activateAnswer = z.object({ flow: Flow, issues: z.array(ValidationIssue) });
export const flowTemplatesAnswer = z.object({
  templates: z.array(
    z.object({
      slug: z.string(),
      name: z.string(),
      description: z.string(),
      trigger_type: z.enum(["keyword", "first_inbound_message", "manual"]),
      node_count: z.number().int(),
    }),
  ),
});
export const runsPage = z.object({ runs: z.array(FlowRun), next_cursor: nextCursor });
export const runAnswer = z.object({ run: FlowRun });
export const runWithEvents = z.object({ run: FlowRun, events: z.array(FlowRunEvent) });
