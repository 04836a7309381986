import { and, desc, eq, sql } from "drizzle-orm";
import { autoAssign } from "../../bots/assign.js";
import { pausedColumns } from "../../bots/automation.js";
import { getBusinessHours, isOpenAt } from "../../bots/hours.js";
import type { DbOrTx } from "../../db/client.js";
import {
  contacts,
  conversations,
  flowRunEvents,
  type flows,
  profiles,
  type StoredNode,
} from "../../db/schema/index.js";
import type { AppDeps } from "../../deps.js";
import { ApiError } from "../../http/errors.js";
import { isUuid } from "../../http/ids.js";
import type { ClaimChannel } from "../../inbox/send.js";
import { isWindowOpen } from "../../inbox/window.js";
import { prepareTemplateSend } from "../../templates/service.js";
import { nodeModule, waitsForAnswer } from "../node-types/index.js";
import type { NodeRuntime } from "../node-types/types.js";
import { nodesOf } from "../service.js";
import { resolveFallbackPolicy } from "../triggers.js";
import { buildNodeMessage, replyChoices } from "./outbound.js";
import { type ContactFacts, renderText } from "./rules.js";
import { deferBotMessage, queueBotMessage, scheduleResume } from "./send.js";
import {
  onCommit,
  type RunEventType,
  RunGone,
  type RunPatch,
  type RunRow,
  type RunStatus,
  type RunWrites,
  takesCommitHooks,
  writeRun,
} from "./store.js";

/**
 * Moves one run through its graph: from a node until the run waits for the
 * customer (buttons, list, input) or ends, and from a customer's reply at the
 * node it waits on. Runs on the connection holding the contact's lock.
 */

/** Nodes one advance may enter; the 65th ends the run `failed` (reason step_limit). */
export const MAX_STEPS_PER_ADVANCE = 64;

export type RunnerDeps = Pick<
  AppDeps,
  | "db"
  | "pool"
  | "cipher"
  | "graph"
  | "sends"
  | "claimedSends"
  | "contactTransactions"
  | "now"
  | "config"
  | "log"
>;
export type FlowRow = typeof flows.$inferSelect;

export interface RunContext {
  /** The transaction of this advance (it holds the contact's lock). */
  db: DbOrTx;
  deps: RunnerDeps;
  flow: FlowRow;
  /** The run as this advance leaves it (its changes are in `writes` until guardRun writes them). */
  run: RunRow;
  writes: RunWrites;
  contact: ContactFacts & { id: string };
  steps: number;
  /**
   * Meta's id of the customer message this advance answers: the first bot
   * message it sends marks it read, with a typing indicator, just before.
   */
  replyTo?: string | null;
  /**
   * What the customer message behind this advance told about its conversation
   * (so it is not read again): the window's start, the number written to and
   * its send rate (messages_per_second).
   */
  inbound?: { customerMessageAt: Date | null; phoneNumberId?: string; sendLimit?: number | null };
  /** The flow's nodes by key, read once per advance (see loadNode). */
  nodes?: Map<string, LoadedNode>;
}

/** The customer message a waiting run is offered. */
export interface InboundInput {
  id: string;
  type: string;
  text: string | null;
  interactive: Record<string, unknown> | null;
  /** Meta's timestamp of the message (whole seconds), when it had one. */
  sentAt: Date | null;
  /** Meta's id of the message (what a read receipt names). */
  upstreamId: string | null;
  /** Meta's id of the message this one answers (`context.id`: the question a tap was on). */
  contextId?: string | null;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value);

/** What the runner uses of a contact row. */
export const contactFacts = (row: typeof contacts.$inferSelect) => ({
  id: row.id,
  name: row.name,
  phone: row.phone,
  waId: row.waId,
  tags: row.tags,
  optedOut: row.optedOut,
});

export async function loadContact(db: DbOrTx, accountId: string, contactId: string) {
  const [row] = await db
    .select()
    .from(contacts)
    .where(and(eq(contacts.id, contactId), eq(contacts.accountId, accountId)));
  return row ? contactFacts(row) : null;
}

export interface LoadedNode {
  nodeType: string;
  config: Record<string, unknown>;
}

/**
 * A node of the run's flow. The first look-up of an advance reads all the
 * flow's nodes in one query (an advance usually enters several); they cannot
 * change under it: a PUT of the flow replaces its nodes in a transaction of
 * its own, seen by the next advance.
 */
export async function loadNode(ctx: RunContext, nodeKey: string): Promise<LoadedNode | null> {
  ctx.nodes ??= await readNodes(ctx.db, ctx.flow.id);
  return ctx.nodes.get(nodeKey) ?? null;
}

/** The flow's nodes as loadNode keeps them, read in one statement. */
export async function readNodes(db: DbOrTx, flowId: string): Promise<Map<string, LoadedNode>> {
  return nodeMap(await nodesOf(db, flowId));
}

type NodeFields = Pick<StoredNode, "node_key" | "node_type" | "config">;

/** A flow's nodes as loadNode keeps them, from flow_graphs' document. */
const nodeMap = (nodes: NodeFields[]) =>
  new Map<string, LoadedNode>(
    nodes.map((n) => [n.node_key, { nodeType: n.node_type, config: isObject(n.config) ? n.config : {} }]),
  );

/** Records one of the run's events (written with the run's changes, in order). */
function event(
  ctx: RunContext,
  type: RunEventType,
  nodeKey: string | null,
  payload: Record<string, unknown> = {},
) {
  ctx.writes.events.push({ type, nodeKey, payload, at: ctx.deps.now() });
}

/** Changes the run (written at the end of the advance). */
function patchRun(ctx: RunContext, patch: RunPatch) {
  ctx.run = { ...ctx.run, ...patch };
  Object.assign(ctx.writes.patch, patch);
}

function finish(
  ctx: RunContext,
  status: Exclude<RunStatus, "active">,
  reason: string,
  nodeKey: string | null,
  payload: Record<string, unknown> = {},
) {
  const at = ctx.deps.now();
  patchRun(ctx, {
    status,
    endReason: reason,
    endedAt: at,
    lastActivityAt: at,
    awaitingMessageId: null,
    resumeAt: null,
  });
  if (status === "completed") event(ctx, "completed", nodeKey, { reason, ...payload });
  if (status === "failed") event(ctx, "error", nodeKey, { reason, ...payload });
}

/** Ends the run `failed`, recording why in an `error` event. */
export function failRun(
  ctx: RunContext,
  reason: string,
  message: string,
  nodeKey: string | null,
  extra = {},
) {
  return finish(ctx, "failed", reason, nodeKey, { message, ...extra });
}

/**
 * Starts walking at `startKey`: enters nodes one after the other until one
 * waits for the customer or ends the run. `from` names the node whose edge led
 * here, for the error when that edge is empty.
 */
export async function walk(ctx: RunContext, startKey: unknown, from: string | null): Promise<void> {
  let key = startKey;
  let previous = from;
  for (;;) {
    if (typeof key !== "string" || key === "") {
      const where = previous === null ? "The flow has no entry node" : `Node "${previous}" has no next node`;
      return failRun(ctx, "invalid_node", where, previous);
    }
    if (ctx.steps >= MAX_STEPS_PER_ADVANCE) {
      return failRun(
        ctx,
        "step_limit",
        `Stopped after ${MAX_STEPS_PER_ADVANCE} steps without waiting for the customer (a loop or a very long path)`,
        key,
      );
    }
    ctx.steps += 1;
    const node = await loadNode(ctx, key);
    if (!node) {
      return failRun(ctx, "node_missing", `Node "${key}" does not exist (the flow was edited)`, key);
    }
    patchRun(ctx, { currentNodeKey: key, lastActivityAt: ctx.deps.now() });
    event(ctx, "node_entered", key, { node_type: node.nodeType });

    previous = key;
    const type = nodeModule(node.nodeType);
    if (!type) {
      return failRun(ctx, "invalid_node", `Node "${key}" has the unknown type "${node.nodeType}"`, key);
    }
    const step = await type.enter(node.config, nodeRuntime(ctx, key, node));
    if (step === undefined) return;
    key = step.next;
  }
}

/** What a node entered by a walk may do to its run (see NodeRuntime). */
function nodeRuntime(ctx: RunContext, key: string, node: LoadedNode): NodeRuntime {
  return {
    key,
    get vars() {
      return ctx.run.vars;
    },
    get contact() {
      return ctx.contact;
    },
    render: (text) => renderText(text, ctx.run.vars, ctx.contact),
    invalid: (message) => failRun(ctx, "invalid_node", message, key),
    complete: (reason) => finish(ctx, "completed", reason, key),
    send: async () => {
      // The walk goes on once the message is out (continueAfterSend, from its send job).
      await sendNode(ctx, key, node.nodeType, node.config);
    },
    ask: () => enterWaiting(ctx, key, node.nodeType, node.config, 0),
    sleep: (minutes) => sleep(ctx, key, minutes),
    isOpen: async () => {
      const hours = await getBusinessHours(ctx.db, ctx.run.accountId);
      // An account without business hours is always open.
      return !hours || isOpenAt(hours, ctx.deps.now());
    },
    setTag: (mode, tag) => setTag(ctx, mode, tag),
    handOff: (input) => handOff(ctx, key, { ...input, reason: "handoff_node" }),
  };
}

/**
 * Queues a node's message: stored `pending`, handed to the send pipeline once
 * this advance commits (or sent by a job on the customer's queue, outside a
 * contact's transaction). The run waits for that send (its
 * awaiting_message_id); false when the run ended because nothing could be queued.
 */
async function sendNode(ctx: RunContext, nodeKey: string, nodeType: string, config: Record<string, unknown>) {
  const built = buildNodeMessage(nodeType, config, ctx.run.vars, ctx.contact);
  if (!built.ok) {
    failRun(ctx, "invalid_node", `Node "${nodeKey}": ${built.problem}`, nodeKey);
    return false;
  }
  let message = built.message;
  if (message.outbound.type === "template") {
    // Checked again at send time: the template may have been paused or removed since activation.
    const { template } = message.outbound;
    try {
      message = await prepareTemplateSend(ctx.db, ctx.run.accountId, {
        name: template.name,
        language: template.language.code,
        components: template.components,
      });
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      failRun(ctx, "template_unavailable", `Node "${nodeKey}": ${error.message}`, nodeKey);
      return false;
    }
  } else if (!(await windowOpen(ctx))) {
    // Outside the 24-hour window only templates go out: nothing is sent upstream.
    failRun(
      ctx,
      "window_closed",
      `Node "${nodeKey}": the 24-hour customer service window is closed; only a template can be sent`,
      nodeKey,
    );
    return false;
  }
  // In the contact's transaction (as every advance is, but for a savepoint's): the message is
  // stored claimed, with the advance's run write (one statement), and handed to this instance's
  // send pipeline once the advance commits; no send job goes through the queue. A crash before
  // Meta answers leaves its settle job (section 10).
  const readMessageId = ctx.replyTo ?? null;
  const steps = ctx.steps;
  const input = {
    run: ctx.run,
    contact: ctx.contact,
    message,
    steps,
    now: ctx.deps.now(),
    readMessageId,
    phoneNumberId: ctx.inbound?.phoneNumberId,
  };
  // (One message a statement: an advance sends one before it stops, but should it send another,
  // that one is stored at once.)
  const inline = takesCommitHooks(ctx.db);
  const deferred = inline && !ctx.writes.alongside;
  const claimed = inline ? { ...input, claimedSettleAt: ctx.deps.claimedSends.settleDueAt() } : null;
  const queued = claimed
    ? await (deferred ? deferBotMessage(ctx.db, claimed) : queueBotMessage(ctx.db, claimed))
    : await queueBotMessage(ctx.db, input);
  if (!queued.ok) {
    failRun(ctx, queued.reason, queued.message, nodeKey);
    return false;
  }
  /** Once the message is stored claimed: its slot asked for, and its send once the advance commits. */
  const handOver = (channel: ClaimChannel, hinted: boolean) => {
    if (!hinted && channel.phoneNumberId && channel.limit)
      ctx.deps.sends.expect(channel.phoneNumberId, channel.limit);
    const sent = message;
    onCommit(ctx.db, () =>
      ctx.deps.claimedSends.send(
        {
          messageId: queued.messageId,
          runId: ctx.run.id,
          steps,
          ...(readMessageId ? { readMessageId } : {}),
        },
        {
          accountId: ctx.run.accountId,
          type: sent.outbound.type,
          text: sent.text,
          payload: sent.outbound,
          contactId: ctx.contact.id,
          phone: ctx.contact.phone,
          waId: ctx.contact.waId,
          // The run as the advance left it (committed): still waiting for this message, or ended.
          runStatus: ctx.run.status,
          awaiting: ctx.run.awaitingMessageId,
          phoneNumberId: channel.phoneNumberId,
          accessToken: channel.accessToken,
          limit: channel.limit,
          campaignId: null,
          firstTry: true,
        },
      ),
    );
  };
  if ("parts" in queued) {
    // Its number's slot is reserved while the advance writes and commits (nothing is sent before
    // the commit): now when the customer's message told the number's rate, else once it is read.
    const { parts } = queued;
    const { phoneNumberId, sendLimit } = ctx.inbound ?? {};
    if (phoneNumberId && sendLimit) ctx.deps.sends.expect(phoneNumberId, sendLimit);
    const hinted = Boolean(phoneNumberId && sendLimit);
    ctx.writes.alongside = {
      ...parts,
      read: (row) => {
        const { channel } = parts.read(row);
        if (channel) handOver(channel, hinted);
      },
    };
  } else if (inline && queued.channel) {
    handOver(queued.channel, false);
  }
  ctx.replyTo = null;
  patchRun(ctx, { awaitingMessageId: queued.messageId, questionSentAt: null });
  return true;
}

async function windowOpen(ctx: RunContext): Promise<boolean> {
  if (!ctx.run.conversationId) return false;
  if (ctx.inbound) return isWindowOpen(ctx.inbound, ctx.deps.now());
  const [conversation] = await ctx.db
    .select({ customerMessageAt: conversations.customerMessageAt })
    .from(conversations)
    .where(eq(conversations.id, ctx.run.conversationId));
  return conversation ? isWindowOpen(conversation, ctx.deps.now()) : false;
}

/**
 * After a node's message went out (the send job calls this in its own
 * advance): a waiting node now waits, from the moment Meta took its question;
 * a sending node walks on to its next node.
 */
export async function continueAfterSend(
  ctx: RunContext,
  sent: { messageId: string; upstreamId: string | null; type: string; at: Date },
): Promise<void> {
  const key = ctx.run.currentNodeKey;
  const waits = key !== null && waitsForAnswer((await loadNode(ctx, key))?.nodeType ?? "");
  const questionSentAt = waits ? sent.at : null;
  patchRun(ctx, { awaitingMessageId: null, questionSentAt, lastActivityAt: ctx.deps.now() });
  event(ctx, "message_sent", key, {
    message_id: sent.messageId,
    upstream_message_id: sent.upstreamId,
    type: sent.type,
  });
  if (!key) return;
  const node = await loadNode(ctx, key);
  if (!node) return failRun(ctx, "node_missing", `Node "${key}" does not exist (the flow was edited)`, key);
  if (waitsForAnswer(node.nodeType)) return;
  const next = nodeModule(node.nodeType)?.afterSend?.(node.config);
  if (next === undefined || next === "" || next === null) return finish(ctx, "completed", "end_of_path", key);
  return walk(ctx, next, key);
}

/** The run sleeps until its resume job (scheduled in this advance) wakes it. */
async function sleep(ctx: RunContext, key: string, minutes: number) {
  const resumeAt = new Date(ctx.deps.now().getTime() + minutes * 60_000);
  patchRun(ctx, { resumeAt });
  await scheduleResume(ctx.db, { run: ctx.run, contact: ctx.contact, nodeKey: key, at: resumeAt });
}

/** The end of a sleep (a `wait` node): the walk goes on from where the node's `resume` says. */
export async function resumeAfterWait(ctx: RunContext, nodeKey: string): Promise<"resumed" | "stale"> {
  if (ctx.run.currentNodeKey !== nodeKey || ctx.run.resumeAt === null) return "stale";
  const node = await loadNode(ctx, nodeKey);
  patchRun(ctx, { resumeAt: null, lastActivityAt: ctx.deps.now() });
  const resume = node ? nodeModule(node.nodeType)?.resume : undefined;
  if (!node || !resume) {
    failRun(ctx, "node_missing", `Node "${nodeKey}" is no longer a wait node (the flow was edited)`, nodeKey);
    return "resumed";
  }
  await walk(ctx, resume(node.config), nodeKey);
  return "resumed";
}

/** Sends the question of a waiting node and leaves the run waiting there. */
async function enterWaiting(
  ctx: RunContext,
  nodeKey: string,
  nodeType: string,
  config: Record<string, unknown>,
  repromptCount: number,
) {
  patchRun(ctx, { repromptCount, lastActivityAt: ctx.deps.now() });
  await sendNode(ctx, nodeKey, nodeType, config);
}

async function setTag(ctx: RunContext, mode: "add" | "remove", tag: string) {
  const [row] = await ctx.db
    .update(contacts)
    .set({
      tags:
        mode === "add"
          ? sql`case when ${tag} = any(${contacts.tags}) then ${contacts.tags} else array_append(${contacts.tags}, ${tag}) end`
          : sql`array_remove(${contacts.tags}, ${tag})`,
      updatedAt: ctx.deps.now(),
    })
    .where(and(eq(contacts.id, ctx.contact.id), eq(contacts.accountId, ctx.run.accountId)))
    .returning({ tags: contacts.tags });
  if (row) ctx.contact = { ...ctx.contact, tags: row.tags };
}

/**
 * Ends the run `handed_off` and puts the conversation in the agents' queue:
 * status pending, the note, and the assignee when assign_to is a member of the
 * account (anyone else is ignored and noted in the event).
 */
async function handOff(
  ctx: RunContext,
  nodeKey: string,
  input: { note: string | null; assignTo: unknown; reason: string },
) {
  let assignee: string | null = null;
  if (input.assignTo !== undefined && input.assignTo !== null && input.assignTo !== "") {
    if (isUuid(input.assignTo)) {
      const [member] = await ctx.db
        .select({ userId: profiles.userId })
        .from(profiles)
        .where(and(eq(profiles.userId, input.assignTo), eq(profiles.accountId, ctx.run.accountId)));
      assignee = member?.userId ?? null;
    }
  }
  finish(ctx, "handed_off", input.reason, nodeKey);
  if (ctx.run.conversationId) {
    await ctx.db
      .update(conversations)
      .set({
        status: "pending",
        handoffNote: input.note,
        // A person now owns the conversation: the bot steps back until it is unassigned or closed.
        ...(assignee ? { assignedTo: assignee, ...pausedColumns("assigned", null) } : {}),
        updatedAt: ctx.deps.now(),
      })
      .where(
        and(eq(conversations.id, ctx.run.conversationId), eq(conversations.accountId, ctx.run.accountId)),
      );
  }
  // Nobody named: auto-assignment's turn (this conversation only, in this advance).
  const [autoAssigned] =
    !assignee && ctx.run.conversationId
      ? await autoAssign(ctx.db, {
          accountId: ctx.run.accountId,
          conversationId: ctx.run.conversationId,
          now: ctx.deps.now(),
        })
      : [];
  event(ctx, "handoff", nodeKey, {
    reason: input.reason,
    note: input.note,
    assigned_to: assignee ?? autoAssigned ?? null,
    ...(autoAssigned ? { auto_assigned: true } : {}),
    ...(assignee === null && input.assignTo ? { assign_to_ignored: "not a member of this account" } : {}),
  });
}

/** Offers a customer message to the node the run waits on. */
export async function answer(ctx: RunContext, message: InboundInput): Promise<"advanced" | "ignored"> {
  const key = ctx.run.currentNodeKey;
  const node = key ? await loadNode(ctx, key) : null;
  if (!key || !node) {
    failRun(ctx, "node_missing", `Node "${key ?? ""}" does not exist (the flow was edited)`, key);
    return "advanced";
  }
  const read = nodeModule(node.nodeType)?.answer;
  if (!read) {
    // A run left between nodes (no send or wait pending): it goes on from where it stood.
    await walk(ctx, key, null);
    return "advanced";
  }
  const found = read(node.config, message);
  if (typeof found === "string") {
    failRun(ctx, "invalid_node", `Node "${key}": ${found}`, key);
    return "advanced";
  }
  if (found) {
    const vars = found.vars ? { ...ctx.run.vars, ...found.vars } : ctx.run.vars;
    patchRun(ctx, { vars, repromptCount: 0, lastActivityAt: ctx.deps.now() });
    event(ctx, "reply_received", key, { message_id: message.id, ...found.payload });
    await walk(ctx, found.next, key);
    return "advanced";
  }
  return applyFallback(ctx, key, node.nodeType, node.config, message);
}

/** The reply id of a tap (a button or list reply, a template's quick reply); null for anything else. */
export function tapReplyId(message: InboundInput): string | null {
  const id = message.interactive?.id;
  return typeof id === "string" ? id : null;
}

/**
 * The question of this run a tap answers: the one its `context.id` names
 * (Meta's id of a question the run sent, the pending one or an earlier one),
 * else the pending question when the tap's reply id is one of its options.
 * A tap is proof the customer saw the question, so no timing rule applies.
 * Null when the tap answers none of the run's questions.
 */
async function tappedQuestion(
  ctx: RunContext,
  message: InboundInput,
): Promise<{ nodeKey: string; replyId: string; next: unknown } | null> {
  const replyId = tapReplyId(message);
  if (replyId === null) return null;
  const keys: string[] = [];
  if (message.contextId) {
    const [sent] = await ctx.db
      .select({ nodeKey: flowRunEvents.nodeKey })
      .from(flowRunEvents)
      .where(
        and(
          eq(flowRunEvents.runId, ctx.run.id),
          eq(flowRunEvents.eventType, "message_sent"),
          sql`${flowRunEvents.payload}->>'upstream_message_id' = ${message.contextId}`,
        ),
      )
      .orderBy(desc(flowRunEvents.id))
      .limit(1);
    if (sent?.nodeKey) keys.push(sent.nodeKey);
  }
  if (ctx.run.currentNodeKey) keys.push(ctx.run.currentNodeKey);
  for (const nodeKey of keys) {
    const node = await loadNode(ctx, nodeKey);
    if (!node) continue;
    const choices = replyChoices(node.nodeType, node.config);
    if (choices.has(replyId)) return { nodeKey, replyId, next: choices.get(replyId) };
  }
  return null;
}

/**
 * Offers a tap to the run: "advanced" when it answered the pending question or
 * an earlier one of the run (whose option's branch the run then follows,
 * leaving any wait or queued send behind); null when it answers none, for the
 * caller to treat it as any other message.
 */
export async function answerTap(ctx: RunContext, message: InboundInput): Promise<"advanced" | null> {
  const tapped = await tappedQuestion(ctx, message);
  if (!tapped) return null;
  const earlier = tapped.nodeKey !== ctx.run.currentNodeKey;
  patchRun(ctx, {
    repromptCount: 0,
    lastActivityAt: ctx.deps.now(),
    ...(earlier ? { awaitingMessageId: null, resumeAt: null, questionSentAt: null } : {}),
  });
  event(ctx, "reply_received", tapped.nodeKey, {
    message_id: message.id,
    reply_id: tapped.replyId,
    ...(earlier ? { earlier_question: true } : {}),
  });
  await walk(ctx, tapped.next, tapped.nodeKey);
  return "advanced";
}

async function applyFallback(
  ctx: RunContext,
  key: string,
  nodeType: string,
  config: Record<string, unknown>,
  message: InboundInput,
): Promise<"advanced" | "ignored"> {
  const policy = resolveFallbackPolicy(ctx.flow.fallbackPolicy);
  const base = { message_id: message.id };
  const handoffNote = (why: string) =>
    `Flow "${ctx.flow.name}" handed the conversation over: ${why} at step "${key}".`;
  switch (policy.on_unknown_reply) {
    case "ignore":
      event(ctx, "fallback_fired", key, { ...base, action: "ignore" });
      return "ignored";
    case "handoff":
      event(ctx, "fallback_fired", key, { ...base, action: "handoff" });
      await handOff(ctx, key, {
        note: handoffNote("the customer's answer was not one the flow expects"),
        assignTo: undefined,
        reason: "unknown_reply",
      });
      return "advanced";
    default: {
      if (ctx.run.repromptCount < policy.max_reprompts) {
        const attempt = ctx.run.repromptCount + 1;
        event(ctx, "fallback_fired", key, {
          ...base,
          action: "reprompt",
          attempt,
          max_reprompts: policy.max_reprompts,
        });
        await enterWaiting(ctx, key, nodeType, config, attempt);
        return "advanced";
      }
      event(ctx, "fallback_fired", key, {
        ...base,
        action: policy.on_exhaust,
        reason: "reprompts_exhausted",
      });
      if (policy.on_exhaust === "end") {
        finish(ctx, "completed", "reprompts_exhausted", key);
      } else {
        await handOff(ctx, key, {
          note: handoffNote(`no valid answer after ${policy.max_reprompts} reprompts`),
          assignTo: undefined,
          reason: "reprompts_exhausted",
        });
      }
      return "advanced";
    }
  }
}

/**
 * Runs an advance and writes what it changed on the run (one statement). A
 * run that vanished (its flow was deleted) or ended under it is reported, and
 * any other failure ends the run `failed` before it is rethrown, so no run is
 * left half-advanced and active. With `last`, the run's write ends the
 * transaction (writeRun's `last`): the caller runs no statement after it.
 */
export async function guardRun<T>(
  ctx: RunContext,
  work: () => Promise<T>,
  options: { last?: boolean } = {},
): Promise<T | "run_gone"> {
  try {
    const result = await work();
    await writeRun(ctx.db, ctx.run.id, ctx.writes, options);
    return result;
  } catch (error) {
    if (error instanceof RunGone) return "run_gone";
    failRun(ctx, "internal_error", "The run stopped on an internal error", ctx.run.currentNodeKey);
    ctx.writes.alongside = undefined;
    await writeRun(ctx.db, ctx.run.id, ctx.writes).catch(() => undefined);
    throw error;
  }
}
