import { randomInt } from "node:crypto";
import { and, asc, eq, sql } from "drizzle-orm";
import { isOptedOut, optedOutError } from "../../contacts/contacts.js";
import type { DbOrTx } from "../../db/client.js";
import { pgErrorCode } from "../../db/errors.js";
import {
  conversations,
  EXECUTION_COUNT_SHARDS,
  flowExecutionCounts,
  flowMessageReceipts,
  flowRuns,
  flows,
  messages,
} from "../../db/schema/index.js";
import { ApiError } from "../../http/errors.js";
import type { InboundMessageStored } from "../../messaging/webhook-store.js";
import {
  answer,
  type FlowRow,
  guardRun,
  type InboundInput,
  loadContact,
  type RunContext,
  type RunnerDeps,
  walk,
} from "./engine.js";
import { matchesKeyword, readKeywordTrigger } from "./rules.js";
import { addRunEvent, findActiveRun, type RunRow, withContactLock } from "./store.js";

/**
 * What the runner did with an inbound message:
 * - started: it triggered a flow; advanced: it moved the contact's run (a
 *   fallback counts); ignored: the run's policy left it to agents;
 * - unseen_question: the run's question had not reached the customer when
 *   they wrote (not sent yet, or sent in the same second or later than the
 *   message), or the run is in a `wait`: the message is no answer, and is
 *   consumed without a reprompt;
 * - lost_race: another message of the contact started a run first, and this
 *   one is consumed by that race (it neither starts nor advances a run);
 * - no_trigger: no active flow wanted it; duplicate: already taken;
 * - run_gone: the run was deleted (with its flow) or ended while advancing;
 * - not_customer_message: the id is no inbound customer message of the account.
 */
export type DispatchOutcome =
  | "started"
  | "advanced"
  | "ignored"
  | "unseen_question"
  | "lost_race"
  | "no_trigger"
  | "duplicate"
  | "run_gone"
  | "not_customer_message";

/**
 * Offers a stored customer message to the flows (from the job that processes
 * its delivery, one customer's deliveries at a time). The whole advance is one
 * transaction under the contact's lock, its sends being jobs added in it: a
 * crash anywhere leaves nothing half-done, and the retried job does it all
 * again (the receipt keeps a message from acting twice). The active run seen
 * before taking the lock decides between advancing and triggering: a message
 * that finds a run started meanwhile by another message lost that race.
 */
export async function offerInboundMessage(
  deps: RunnerDeps,
  event: InboundMessageStored,
): Promise<DispatchOutcome> {
  const seen = await findActiveRun(deps.db, event.accountId, event.contactId);
  // Most messages neither advance a run nor start one: settle those without the
  // contact's lock or a receipt. (Had another message started a run meanwhile,
  // this one arrived while the contact was free and would lose that race anyway.)
  if (!seen && !(await anyFlowWants(deps.db, event))) return "no_trigger";
  return withContactLock(deps.pool, event, async (db) => {
    const [message] = await db
      .select()
      .from(messages)
      .where(
        and(
          eq(messages.id, event.messageId),
          eq(messages.accountId, event.accountId),
          eq(messages.conversationId, event.conversationId),
          eq(messages.direction, "inbound"),
          eq(messages.senderType, "customer"),
        ),
      );
    if (!message) return "not_customer_message";
    const taken = await db
      .insert(flowMessageReceipts)
      .values({ messageId: message.id, accountId: event.accountId, outcome: "pending" })
      .onConflictDoNothing()
      .returning({ messageId: flowMessageReceipts.messageId });
    if (taken.length === 0) return "duplicate";

    const input: InboundInput = {
      id: message.id,
      type: message.type,
      text: message.text,
      interactive: message.interactive,
      sentAt: message.upstreamTimestamp,
      upstreamId: message.messageId,
    };
    const result = await offer(db, deps, event, input, seen?.id ?? null);
    await db
      .update(flowMessageReceipts)
      .set({ outcome: result.outcome, runId: result.runId })
      .where(eq(flowMessageReceipts.messageId, message.id));
    return result.outcome;
  });
}

async function offer(
  db: DbOrTx,
  deps: RunnerDeps,
  event: InboundMessageStored,
  message: InboundInput,
  seenRunId: string | null,
): Promise<{ outcome: DispatchOutcome; runId: string | null }> {
  const active = await findActiveRun(db, event.accountId, event.contactId);
  if (active) {
    if (active.id !== seenRunId) return { outcome: "lost_race", runId: active.id };
    if (!canAnswer(active, message)) return { outcome: "unseen_question", runId: active.id };
    const ctx = await contextFor(db, deps, active);
    if (!ctx) return { outcome: "run_gone", runId: null };
    ctx.replyTo = message.upstreamId;
    const outcome = await guardRun(ctx, () => answer(ctx, message));
    return { outcome, runId: outcome === "run_gone" ? null : active.id };
  }

  // An opted-out contact starts no flow.
  if (await isOptedOut(db, event.accountId, event.contactId)) return { outcome: "no_trigger", runId: null };
  const candidates = await db
    .select()
    .from(flows)
    .where(and(eq(flows.accountId, event.accountId), eq(flows.status, "active")))
    .orderBy(asc(flows.createdAt), asc(flows.id));
  for (const flow of candidates) {
    if (!triggers(flow, message, event.firstInbound)) continue;
    const started = await startRun(db, deps, {
      flow,
      contactId: event.contactId,
      conversationId: event.conversationId,
      trigger: { trigger: flow.triggerType, message_id: message.id },
      replyTo: message.upstreamId,
    });
    if (started.kind === "flow_gone") continue;
    if (started.kind === "busy") return { outcome: "lost_race", runId: null };
    return { outcome: "started", runId: started.run.id };
  }
  return { outcome: "no_trigger", runId: null };
}

/**
 * A customer cannot answer a question they have not seen: none is out yet (its
 * send is queued), the run sleeps in a `wait`, or the message was written
 * (Meta's timestamp, whole seconds) before or in the second the question went out.
 */
function canAnswer(run: RunRow, message: InboundInput): boolean {
  if (run.awaitingMessageId !== null || run.resumeAt !== null) return false;
  if (run.questionSentAt === null || message.sentAt === null) return true;
  return message.sentAt.getTime() >= Math.floor(run.questionSentAt.getTime() / 1000) * 1000 + 1000;
}

async function anyFlowWants(db: DbOrTx, event: InboundMessageStored): Promise<boolean> {
  const active = await db
    .select({ triggerType: flows.triggerType, triggerConfig: flows.triggerConfig })
    .from(flows)
    .where(and(eq(flows.accountId, event.accountId), eq(flows.status, "active")));
  const message = { type: event.messageType, text: event.text };
  return active.some((flow) => triggers(flow, message, event.firstInbound));
}

function triggers(
  flow: Pick<FlowRow, "triggerType" | "triggerConfig">,
  message: Pick<InboundInput, "type" | "text">,
  firstInbound: boolean,
): boolean {
  switch (flow.triggerType) {
    case "keyword": {
      const trigger = readKeywordTrigger(flow.triggerConfig);
      return (
        trigger !== null && message.type === "text" && !!message.text && matchesKeyword(message.text, trigger)
      );
    }
    case "first_inbound_message":
      return firstInbound;
    default:
      return false;
  }
}

export async function contextFor(db: DbOrTx, deps: RunnerDeps, run: RunRow): Promise<RunContext | null> {
  const [flow] = await db.select().from(flows).where(eq(flows.id, run.flowId));
  const contact = await loadContact(db, run.accountId, run.contactId);
  if (!flow || !contact) return null;
  return { db, deps, flow, run, contact, steps: 0 };
}

type StartResult = { kind: "started"; run: RunRow } | { kind: "busy" } | { kind: "flow_gone" };

/**
 * Inserts the contact's run (the partial unique index refuses a second active
 * one), counts the execution and walks from the entry node. Call it holding
 * the contact's lock.
 */
async function startRun(
  db: DbOrTx,
  deps: RunnerDeps,
  input: {
    flow: FlowRow;
    contactId: string;
    conversationId: string;
    trigger: Record<string, unknown>;
    replyTo?: string | null;
    /** Answer the run as stored (for the API), not as the walk left it in memory. */
    reread?: boolean;
  },
): Promise<StartResult> {
  const contact = await loadContact(db, input.flow.accountId, input.contactId);
  if (!contact) return { kind: "flow_gone" };
  const now = deps.now();
  let inserted: RunRow | undefined;
  try {
    [inserted] = await db
      .insert(flowRuns)
      .values({
        flowId: input.flow.id,
        accountId: input.flow.accountId,
        contactId: input.contactId,
        conversationId: input.conversationId,
        status: "active",
        currentNodeKey: input.flow.entryNodeId,
        startedAt: now,
        lastActivityAt: now,
      })
      .onConflictDoNothing()
      .returning();
  } catch (error) {
    // The flow was deleted between reading it and inserting its run.
    if (pgErrorCode(error) === "23503") return { kind: "flow_gone" };
    throw error;
  }
  if (!inserted) return { kind: "busy" };

  const ctx: RunContext = {
    db,
    deps,
    flow: input.flow,
    run: inserted,
    contact,
    steps: 0,
    replyTo: input.replyTo ?? null,
  };
  await guardRun(ctx, async () => {
    await addRunEvent(db, inserted, { type: "started", payload: input.trigger, at: now });
    await walk(ctx, input.flow.entryNodeId, null);
  });
  // ctx.run follows every write of the walk, so the run as stored is read only for who shows it.
  const [latest] = input.reread
    ? await db.select().from(flowRuns).where(eq(flowRuns.id, inserted.id))
    : [ctx.run];
  // Counted last: the counter row stays locked until the commit, so the shorter the better.
  await countExecution(db, input.flow.id);
  return { kind: "started", run: latest ?? ctx.run };
}

/** One more run of the flow, on a random one of its counter rows (see flowExecutionCounts). */
async function countExecution(db: DbOrTx, flowId: string): Promise<void> {
  await db
    .insert(flowExecutionCounts)
    .values({ flowId, shard: randomInt(EXECUTION_COUNT_SHARDS), count: 1 })
    .onConflictDoUpdate({
      target: [flowExecutionCounts.flowId, flowExecutionCounts.shard],
      set: { count: sql`${flowExecutionCounts.count} + 1` },
    });
}

/**
 * POST /api/flows/{id}/runs: starts an active flow for a contact of the
 * account. 422 when the flow is not active, 409 when the contact has a run.
 * The contact's conversation is created when it has none yet.
 */
export async function startManualRun(
  deps: RunnerDeps,
  input: { accountId: string; flowId: string; contactId: string; userId: string },
): Promise<RunRow> {
  const { accountId, contactId } = input;
  return withContactLock(deps.pool, { accountId, contactId }, async (db) => {
    const [flow] = await db
      .select()
      .from(flows)
      .where(and(eq(flows.id, input.flowId), eq(flows.accountId, accountId)));
    if (!flow) throw new ApiError(404, "Not found");
    if (flow.status !== "active") {
      throw new ApiError(422, `Only active flows can be started; this flow is ${flow.status}`);
    }
    if (await isOptedOut(db, flow.accountId, contactId)) throw optedOutError();
    if (await findActiveRun(db, flow.accountId, contactId)) {
      throw new ApiError(409, "The contact already has an active flow run");
    }
    await db
      .insert(conversations)
      .values({ accountId: flow.accountId, contactId, lastMessageAt: deps.now() })
      .onConflictDoNothing({ target: conversations.contactId });
    const [conversation] = await db
      .select({ id: conversations.id })
      .from(conversations)
      .where(and(eq(conversations.contactId, contactId), eq(conversations.accountId, flow.accountId)));
    if (!conversation) throw new ApiError(404, "Contact not found");
    const started = await startRun(db, deps, {
      flow,
      contactId,
      conversationId: conversation.id,
      trigger: { trigger: "manual", started_by: input.userId },
      reread: true,
    });
    if (started.kind === "busy") throw new ApiError(409, "The contact already has an active flow run");
    if (started.kind === "flow_gone") throw new ApiError(404, "Not found");
    return started.run;
  });
}
