import { randomUUID } from "node:crypto";
import { and, eq, sql } from "drizzle-orm";
import { autoAssign } from "../../bots/assign.js";
import { getBusinessHours, isOpenAt } from "../../bots/hours.js";
import { optedOutError } from "../../contacts/contacts.js";
import type { DbOrTx } from "../../db/client.js";
import { pgErrorCode } from "../../db/errors.js";
import { prepared } from "../../db/prepared.js";
import { tableRow } from "../../db/rows.js";
import {
  contacts,
  conversations,
  flowMessageReceipts,
  flowRuns,
  flows,
  messages,
} from "../../db/schema/index.js";
import { ApiError } from "../../http/errors.js";
import { sendAwayMessage } from "./away.js";
import {
  answer,
  answerTap,
  contactFacts,
  type FlowRow,
  guardRun,
  type InboundInput,
  loadContact,
  type RunContext,
  type RunnerDeps,
  readNodes,
  tapReplyId,
  walk,
} from "./engine.js";
import type { InboundMessageStored } from "./look.js";
import { type RunnerLook, type RunnerLookRow, runnerLookColumns, toRunnerLook } from "./look.js";
import { cachedNodes, keepNodes } from "./nodes-cache.js";
import { matchesKeyword, readKeywordTrigger } from "./rules.js";
import {
  findActiveRun,
  flowLockedFirst,
  lockRunSql,
  noRunWrites,
  type RunRow,
  withContactLock,
} from "./store.js";

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
 * - paused: the conversation's automation is paused (an agent is on it), so
 *   no flow starts: the message is the agents';
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
  | "paused"
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
  const outcome = await offerToFlows(deps, event);
  if (PEOPLES_OUTCOMES.has(outcome)) await toPeople(deps, event);
  return outcome;
}

/** A message no flow took: the agents' (auto-assignment, the away message). */
const PEOPLES_OUTCOMES = new Set<DispatchOutcome>(["no_trigger", "paused", "ignored"]);

async function toPeople(deps: RunnerDeps, event: InboundMessageStored) {
  const at = { accountId: event.accountId, conversationId: event.conversationId };
  await autoAssign(deps.db, { ...at, now: deps.now() });
  await sendAwayMessage(deps, at);
}

async function offerToFlows(deps: RunnerDeps, event: InboundMessageStored): Promise<DispatchOutcome> {
  const seen = event.look ?? (await lookBeforeLock(deps.db, event));
  // Most messages neither advance a run nor start one: settle those without the
  // contact's lock or a receipt. (Had another message started a run meanwhile,
  // this one arrived while the contact was free and would lose that race anyway.)
  const message = { type: event.messageType, text: event.text };
  if (!seen.runId && !seen.flows.some((flow) => triggers(flow, message, event.firstInbound))) {
    return "no_trigger";
  }
  return deps.contactTransactions.run(event, async (db) => {
    const taken = await takeMessage(db, event, deps.now());
    if (taken === "not_customer_message" || taken === "duplicate") return taken;
    const result = await offer(db, deps, event, taken, seen.runId);
    // A run's advance wrote the receipt with the run's own write.
    if (!result.receiptWritten) {
      await db
        .update(flowMessageReceipts)
        .set({ outcome: result.outcome, runId: result.runId })
        .where(eq(flowMessageReceipts.messageId, taken.message.id));
    }
    return result.outcome;
  });
}

/** The look before the lock (see RunnerLook), when storing the message did not take it. */
async function lookBeforeLock(db: DbOrTx, event: InboundMessageStored): Promise<RunnerLook> {
  const { rows } = await db.execute<RunnerLookRow>(
    sql`select ${runnerLookColumns(event.accountId, sql`${event.contactId}::uuid`)}`,
  );
  return rows[0] ? toRunnerLook(rows[0]) : { runId: null, flows: [] };
}

/** What the advance of a customer message starts from (see takeMessage). */
interface Taken {
  message: InboundInput;
  contact: (RunContext["contact"] & { optedOut: boolean }) | null;
  /**
   * The contact's active run, its row locked (see lockRunSql), with its flow
   * and the flow row's version (`xmin`, the key of its nodes kept).
   */
  active: { run: RunRow; flow: FlowRow; flowVersion: string } | null;
  /** The conversation's automation is paused (an agent is on it). */
  paused: boolean;
  /** When the contact has no run: the account's active flows, oldest first. */
  activeFlows: FlowRow[];
  /** Their rows' versions (`xmin`), by flow id: the key of their nodes kept (nodes-cache.ts). */
  flowVersions: Record<string, string>;
}

/**
 * The message as the runner reads it, with its receipt written, and under the
 * contact's lock what the advance needs first: the contact, its active run
 * with its flow (the run's row locked, see lockRunSql) or when it has none the account's
 * active flows (read under the lock: a flow deactivated since the look before
 * it starts nothing), and whether the conversation's automation is paused.
 * One statement. "duplicate" when the message had a receipt already,
 * "not_customer_message" when the id is no inbound customer message of the
 * conversation.
 */
async function takeMessage(
  db: DbOrTx,
  event: InboundMessageStored,
  now: Date,
): Promise<Taken | "duplicate" | "not_customer_message"> {
  const { rows } = await db.execute<{
    id: string;
    type: string;
    text: string | null;
    interactive: Record<string, unknown> | null;
    sent_at: string | null;
    upstream_id: string | null;
    context_id: string | null;
    taken: boolean;
    contact: {
      id: string;
      name: string | null;
      phone: string | null;
      wa_id: string;
      tags: string[];
      opted_out: boolean;
    } | null;
    active: { run: Record<string, unknown>; flow: Record<string, unknown>; version: string } | null;
    paused: boolean | null;
    flows: Record<string, unknown>[] | null;
    flow_versions: Record<string, string> | null;
  }>(
    prepared(sql`
    with message as (
      select id, type, text, interactive, upstream_timestamp, message_id, context_message_id from ${messages}
       where id = ${event.messageId} and account_id = ${event.accountId}
         and conversation_id = ${event.conversationId} and direction = 'inbound' and sender_type = 'customer'
    ), taken as (
      insert into ${flowMessageReceipts} (message_id, account_id, outcome)
      select id, ${event.accountId}, 'pending' from message
      on conflict do nothing
      returning message_id
    ), run as (${lockRunSql(
      sql`r.account_id = ${event.accountId} and r.contact_id = ${event.contactId}`,
      sql`r.id, r.flow_id, to_json(r) as row`,
    )})
    select m.id, m.type, m.text, m.interactive, m.upstream_timestamp::text as sent_at, m.message_id as upstream_id,
           m.context_message_id as context_id, exists (select 1 from taken) as taken,
           (select json_build_object('id', c.id, 'name', c.name, 'phone', c.phone, 'wa_id', c.wa_id,
                                     'tags', c.tags, 'opted_out', c.opted_out)
              from ${contacts} c where c.id = ${event.contactId} and c.account_id = ${event.accountId}) as contact,
           (select json_build_object('run', run.row, 'flow', to_json(f), 'version', f.xmin::text)
              from run join ${flows} f on f.id = run.flow_id) as active,
           (select v.automation_state = 'paused'
                   and (v.automation_until is null or v.automation_until > ${now.toISOString()}::timestamptz)
              from ${conversations} v where v.id = ${event.conversationId}) as paused,
           active.flows, active.versions as flow_versions
      from message m
      -- Only when the contact has no run: the account's active flows, read once with their versions.
      left join lateral (
        select json_agg(f order by f.created_at, f.id) as flows, json_object_agg(f.id, f.xmin::text) as versions
          from ${flows} f
         where f.account_id = ${event.accountId} and f.status = 'active' and not exists (select 1 from run)
      ) active on true`),
  );
  const row = rows[0];
  if (!row) return "not_customer_message";
  if (!row.taken) return "duplicate";
  const contact = row.contact;
  return {
    message: {
      id: row.id,
      type: row.type,
      text: row.text,
      interactive: row.interactive,
      sentAt: row.sent_at === null ? null : new Date(row.sent_at),
      upstreamId: row.upstream_id,
      contextId: row.context_id,
    },
    contact: contact && {
      id: contact.id,
      name: contact.name,
      phone: contact.phone,
      waId: contact.wa_id,
      tags: contact.tags,
      optedOut: contact.opted_out,
    },
    active: row.active && {
      run: tableRow(flowRuns, row.active.run),
      flow: tableRow(flows, row.active.flow),
      flowVersion: row.active.version,
    },
    paused: row.paused === true,
    activeFlows: (row.flows ?? []).map((flow) => tableRow(flows, flow)),
    flowVersions: row.flow_versions ?? {},
  };
}

async function offer(
  db: DbOrTx,
  deps: RunnerDeps,
  event: InboundMessageStored,
  taken: Taken,
  seenRunId: string | null,
): Promise<{ outcome: DispatchOutcome; runId: string | null; receiptWritten?: boolean }> {
  const { message, contact, paused, activeFlows, flowVersions } = taken;
  if (taken.active) {
    const { run: active, flow, flowVersion } = taken.active;
    if (active.id !== seenRunId) return { outcome: "lost_race", runId: active.id };
    // A tap is proof of sight: it skips the timing rule (see answerTap).
    const tap = tapReplyId(message) !== null;
    if (!tap && !canAnswer(active, message)) return { outcome: "unseen_question", runId: active.id };
    if (!contact) return { outcome: "run_gone", runId: null };
    const ctx: RunContext = {
      db,
      deps,
      flow,
      run: active,
      writes: noRunWrites(),
      contact,
      steps: 0,
      nodes: await nodesAt(db, flow.id, flowVersion),
      replyTo: message.upstreamId,
      inbound: inboundFacts(event),
    };
    // Nothing follows the run's write in this transaction (see offerToFlows): it goes with the
    // commit. The run's row is locked since takeMessage, so the write always finds it active.
    const outcome = await guardRun(
      ctx,
      async (): Promise<DispatchOutcome> => {
        const tapped = tap ? await answerTap(ctx, message) : null;
        const moved = tapped ?? (canAnswer(active, message) ? await answer(ctx, message) : "unseen_question");
        ctx.writes.receipt = { messageId: message.id, outcome: moved };
        return moved;
      },
      { last: true },
    );
    // (Were it gone after all, the transaction has ended: its receipt stays as taken.)
    if (outcome === "run_gone") return { outcome, runId: null, receiptWritten: true };
    return { outcome, runId: active.id, receiptWritten: true };
  }

  // An opted-out contact starts no flow.
  if (!contact || contact.optedOut) return { outcome: "no_trigger", runId: null };
  if (paused) return { outcome: "paused", runId: null };
  // Read once, and only when a flow that triggers asks (outside_business_hours_only).
  let open: boolean | undefined;
  const isOpen = async () => {
    if (open === undefined) {
      const hours = await getBusinessHours(db, event.accountId);
      open = !hours || isOpenAt(hours, deps.now());
    }
    return open;
  };
  for (const flow of activeFlows) {
    if (!triggers(flow, message, event.firstInbound)) continue;
    if (outsideHoursOnly(flow.triggerConfig) && (await isOpen())) continue;
    const started = await startRun(db, deps, {
      flow,
      flowVersion: flowVersions[flow.id],
      contact,
      conversationId: event.conversationId,
      trigger: { trigger: flow.triggerType, message_id: message.id },
      replyTo: message.upstreamId,
      inbound: inboundFacts(event),
      receiptOf: message.id,
      // Nothing follows the run's write in this transaction (see offerToFlows): it goes with the commit.
      last: true,
    });
    return { outcome: "started", runId: started.id, receiptWritten: true };
  }
  return { outcome: "no_trigger", runId: null };
}

/** What storing the message told about its conversation, when it told it. */
function inboundFacts(event: InboundMessageStored): RunContext["inbound"] {
  return event.customerMessageAt === undefined
    ? undefined
    : {
        customerMessageAt: event.customerMessageAt,
        phoneNumberId: event.phoneNumberId,
        sendLimit: event.sendLimit,
      };
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

const outsideHoursOnly = (config: unknown) =>
  config !== null &&
  typeof config === "object" &&
  (config as Record<string, unknown>).outside_business_hours_only === true;

function triggers(
  flow: { triggerType: FlowRow["triggerType"]; triggerConfig: unknown },
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

/**
 * A run's advance from its id, in one statement: the run, if still active,
 * locked as lockRunSql locks it, with its flow and contact (and the flow's
 * nodes, kept by the version of its row).
 */
export async function lockRunContext(
  db: DbOrTx,
  deps: RunnerDeps,
  runId: string,
): Promise<RunContext | null> {
  const [row] = await db
    .select({ run: flowRuns, flow: flows, contact: contacts, flowVersion: sql<string>`${flows}.xmin::text` })
    .from(flowRuns)
    .innerJoin(flows, eq(flows.id, flowRuns.flowId))
    .innerJoin(contacts, and(eq(contacts.id, flowRuns.contactId), eq(contacts.accountId, flowRuns.accountId)))
    .where(and(eq(flowRuns.id, runId), eq(flowRuns.status, "active"), flowLockedFirst(flowRuns.flowId)))
    .for("no key update", { of: flowRuns });
  if (!row) return null;
  return {
    db,
    deps,
    flow: row.flow,
    run: row.run,
    writes: noRunWrites(),
    contact: contactFacts(row.contact),
    steps: 0,
    nodes: await nodesAt(db, row.flow.id, row.flowVersion),
  };
}

/**
 * The flow's nodes at this version of its row (its `xmin`): kept ones
 * (nodes-cache.ts), or read and kept. Without a version, read and not kept.
 */
async function nodesAt(db: DbOrTx, flowId: string, version: string | undefined) {
  const kept = version ? cachedNodes(flowId, version) : undefined;
  if (kept) return kept;
  const nodes = await readNodes(db, flowId);
  if (version) keepNodes(flowId, version, nodes);
  return nodes;
}

/**
 * Starts the contact's run of the flow and walks from the entry node. The run
 * is new to this advance: it is inserted by the advance's run write, with what
 * the walk made of it (one statement, one `flow_run.updated` event), together
 * with its events, the execution count and, for a run a message started, the
 * message's receipt (outcome `started`). Call it holding the contact's lock,
 * having seen no active run under it: the partial unique index refusing a
 * second active run then fails the whole advance (RunBusy), which nothing but
 * a writer outside the lock could cause.
 */
async function startRun(
  db: DbOrTx,
  deps: RunnerDeps,
  input: {
    flow: FlowRow;
    /** The flow row's version read under the lock (its nodes may be kept, see nodes-cache.ts). */
    flowVersion?: string;
    contact: RunContext["contact"];
    conversationId: string;
    trigger: Record<string, unknown>;
    replyTo?: string | null;
    inbound?: RunContext["inbound"];
    /** The customer message that started the run (its receipt is written with the run). */
    receiptOf?: string;
    /** The run's write ends the caller's transaction (guardRun's `last`). */
    last?: boolean;
  },
): Promise<RunRow> {
  const { contact, flow, flowVersion } = input;
  const now = deps.now();
  const run: RunRow = {
    id: randomUUID(),
    flowId: flow.id,
    accountId: flow.accountId,
    contactId: contact.id,
    conversationId: input.conversationId,
    status: "active",
    currentNodeKey: flow.entryNodeId,
    vars: {},
    repromptCount: 0,
    endReason: null,
    awaitingMessageId: null,
    questionSentAt: null,
    resumeAt: null,
    startedAt: now,
    lastActivityAt: now,
    endedAt: null,
  };
  const nodes = await nodesAt(db, flow.id, flowVersion);

  const ctx: RunContext = {
    db,
    deps,
    flow,
    run,
    nodes,
    writes: {
      insert: run,
      patch: {},
      events: [{ type: "started", nodeKey: null, payload: input.trigger, at: now }],
      countStart: true,
      ...(input.receiptOf ? { receipt: { messageId: input.receiptOf, outcome: "started" } } : {}),
    },
    contact,
    steps: 0,
    replyTo: input.replyTo ?? null,
    inbound: input.inbound,
  };
  await guardRun(ctx, () => walk(ctx, flow.entryNodeId, null), { last: input.last });
  return ctx.run;
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
    const contact = await loadContact(db, flow.accountId, contactId);
    if (!contact) throw new ApiError(404, "Contact not found");
    if (contact.optedOut) throw optedOutError();
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
      contact,
      conversationId: conversation.id,
      trigger: { trigger: "manual", started_by: input.userId },
    });
    // The run as stored (its timestamps at the database's precision), as the API shows it.
    const [stored] = await db.select().from(flowRuns).where(eq(flowRuns.id, started.id));
    return stored ?? started;
  }).catch((error: unknown) => {
    // The flow or the contact was deleted while the run started: its insert found no row to refer to.
    if (pgErrorCode(error) === "23503") throw new ApiError(404, "Not found");
    throw error;
  });
}
