import type { QueuedSend, SendPipeline, SendPriority, SendResult } from "../ports.js";
import { GraphApiError, type GraphClient, type WriteGate } from "../upstream/graph.js";
import { type Reservation, type SendRate, SLOT_LATENESS_MS } from "./rate.js";

/**
 * An instance's outgoing sends, as asynchronous I/O: a send waits here for its
 * number's next slot (rate.ts), then its HTTP call is in flight without a job
 * slot or a database connection. What must survive a crash is in PostgreSQL
 * before a send gets here (the claim and its settle job, see outcome.ts); what
 * is in memory is bounded (`capacity`) and, on close, handed back or finished.
 *
 * Per number, customer-facing sends (agents, bots, reactions) take every slot
 * before campaign sends: a campaign delays a reply by one slot at most.
 */

export interface PipelineOptions {
  graph: GraphClient;
  rate: SendRate;
  /** Sends in flight at once (the keep-alive agent's sockets). */
  maxInFlight: number;
  /** Sends waiting plus in flight; more wait in admit() (default 4 x maxInFlight). */
  capacity?: number;
  /** A send waiting longer than this for a slot is released (default 30 s). */
  maxWaitMs?: number;
  /** The upstream call's own timeout (the Graph client's, default 10 s). */
  callTimeoutMs?: number;
  /**
   * Whether a campaign still sends (not cancelled, not paused), asked for
   * each of its sends just before its slot (GATE_LEAD_MS) and again at the
   * slot; an answer may be reused for a moment, and one that comes after the
   * slot's lateness costs the slot, never its place in the schedule. A failure
   * to answer counts as yes.
   */
  campaignGoing?: (campaignId: string) => Promise<boolean>;
  /** Called when Meta refuses for throughput: the number's rate goes down (AIMD). */
  onThrottled?: (phoneNumberId: string, rate: number) => void;
  log?: { warn(o: object, m: string): void };
}

/** Meta's throughput and rate-limit codes: the number's rate goes down. */
export const THROUGHPUT_CODES = new Set([4, 80007, 130429, 131056]);

/** Slots a send on a late connection may try before it goes back to its lane. */
const LATE_RETRIES = 3;

/** Slots reserved at once per number: fewer round trips to the store, little hoarding across instances. */
const MAX_BATCH = 50;

interface Waiting {
  item: QueuedSend;
  since: number;
  resolve(result: SendResult): void;
}

interface NumberLane {
  customer: Waiting[];
  campaign: Waiting[];
  pumping: boolean;
  limit: number;
}

/**
 * A slot reserved ahead for an idle lane (see expect): the lane's next send
 * takes it unless it is late by then (it then passes unused); a hint finding
 * one older than EARLY_SLOT_KEPT_MS (its send never came) reserves anew.
 */
interface EarlySlot {
  slot: Promise<number | undefined>;
  at: number;
}
const EARLY_SLOT_KEPT_MS = 1_000;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, ms)));
const sleepUntil = async (at: number) => {
  while (Date.now() < at) await sleep(Math.ceil(at - Date.now()));
};

/**
 * How long before its slot a campaign send's gate is asked, so that the
 * campaign's first look (one query; later looks are taken while the last
 * answer serves, see campaigns/gate.ts) is answered when the slot comes.
 */
const GATE_LEAD_MS = 40;

export function createSendPipeline(options: PipelineOptions): SendPipeline {
  const capacity = options.capacity ?? options.maxInFlight * 4;
  // Room kept for customer-facing sends whatever campaigns have queued.
  const campaignCapacity = Math.max(1, capacity - Math.max(1, Math.floor(capacity / 5)));
  const maxWaitMs = options.maxWaitMs ?? 30_000;
  const lanes = new Map<string, NumberLane>();
  const admitWaiters: { priority: SendPriority; resolve: () => void }[] = [];
  const earlySlots = new Map<string, EarlySlot>();
  const tracked = new Set<Promise<unknown>>();
  let waiting = 0;
  let flying = 0;
  let socketWaiters: Array<() => void> = [];
  let closed = false;

  const size = () => waiting + flying;
  const roomFor = (priority: SendPriority) =>
    size() < (priority === "customer" ? capacity : campaignCapacity);

  const wakeAdmitted = () => {
    // Customer-facing waiters first.
    admitWaiters.sort((a, b) => (a.priority === b.priority ? 0 : a.priority === "customer" ? -1 : 1));
    while (admitWaiters.length > 0 && (closed || roomFor(admitWaiters[0]?.priority ?? "customer"))) {
      admitWaiters.shift()?.resolve();
      if (!closed) break; // one at a time: the admitted send takes its room before the next is checked
    }
  };

  const track = (work: Promise<unknown>) => {
    tracked.add(work);
    const done = () => tracked.delete(work);
    work.then(done, done);
  };

  const take = (lane: NumberLane): Waiting | undefined => {
    const next = lane.customer.shift() ?? lane.campaign.shift();
    if (next) waiting -= 1;
    return next;
  };

  const releaseExpired = (lane: NumberLane, now: number) => {
    for (const key of ["customer", "campaign"] as const) {
      const keep: Waiting[] = [];
      for (const w of lane[key]) {
        if (now - w.since > maxWaitMs || closed) {
          waiting -= 1;
          w.resolve({ kind: "released" });
        } else keep.push(w);
      }
      lane[key] = keep;
    }
    wakeAdmitted();
  };

  /** Queues a send on its number's lane (at the front: one that lost its slot), pumping the lane. */
  const enqueue = (w: Waiting, front = false) => {
    const { item } = w;
    let lane = lanes.get(item.phoneNumberId);
    if (!lane) {
      lane = { customer: [], campaign: [], pumping: false, limit: item.limit };
      lanes.set(item.phoneNumberId, lane);
    }
    lane.limit = item.limit;
    if (front) lane[item.priority].unshift(w);
    else lane[item.priority].push(w);
    waiting += 1;
    const target = lane;
    if (!target.pumping) {
      void pump(item.phoneNumberId, target).finally(() => {
        if (target.customer.length + target.campaign.length === 0 && !target.pumping) {
          lanes.delete(item.phoneNumberId);
        }
      });
    }
  };

  /**
   * When a send taken at `slot` may be written: at once if its connection was ready
   * within the slot's lateness (a kept-alive one always is); a new connection that
   * came later keeps itself and the send for another slot of the number's schedule,
   * so that a slow connect never writes a send late, bunched with later slots.
   */
  const writeGate =
    (item: QueuedSend, slot: number): WriteGate =>
    async () => {
      let at = slot;
      for (let tries = 0; Date.now() > at + SLOT_LATENESS_MS; tries++) {
        if (closed || tries === LATE_RETRIES) return false;
        const reservation = await options.rate
          .reserve(item.phoneNumberId, item.limit, 1)
          .catch(() => undefined);
        if (!reservation) return false;
        at = reservation.firstAtMs;
        await sleepUntil(at);
      }
      return true;
    };

  const fly = (w: Waiting, slot: number) => {
    flying += 1;
    const { item } = w;
    const failed = (error: unknown): SendResult => {
      const code = (error as { code?: unknown }).code;
      if (typeof code === "number" && THROUGHPUT_CODES.has(code)) {
        track(
          options.rate.slowDown(item.phoneNumberId, item.limit).then(
            (rate) => options.onThrottled?.(item.phoneNumberId, rate),
            () => undefined,
          ),
        );
      }
      return { kind: "error", error };
    };
    track(
      options.graph
        .sendMessage(item.token, item.phoneNumberId, item.to, item.message, {
          callbackData: item.messageId ?? undefined,
          writeWhenReady: writeGate(item, slot),
        })
        .then(
          (sent): SendResult | "late" => ({ kind: "sent", sent }),
          (error) => (error instanceof GraphApiError && error.kind === "late" ? "late" : failed(error)),
        )
        .then((result) => {
          flying -= 1;
          const wake = socketWaiters;
          socketWaiters = [];
          for (const resolve of wake) resolve();
          // Its connection missed its slot and the ones after: nothing left, it waits in its lane again.
          if (result === "late") {
            if (closed) w.resolve({ kind: "released" });
            else enqueue(w, true);
            return;
          }
          wakeAdmitted();
          w.resolve(result);
        }),
    );
  };

  /**
   * Whether the lane's next send may go: a campaign send whose campaign was
   * cancelled or paused since its claim is answered `withdrawn` and dropped,
   * until the head is a send that goes (true) or the lane is empty (false).
   */
  const headGoes = async (lane: NumberLane): Promise<boolean> => {
    const going = options.campaignGoing;
    for (;;) {
      const head = lane.customer[0] ?? lane.campaign[0];
      if (!head) return false;
      const campaignId = head.item.campaignId;
      if (!campaignId || !going) return true;
      if (await going(campaignId).catch(() => true)) return true;
      const at = lane.campaign.indexOf(head);
      if (at >= 0) {
        lane.campaign.splice(at, 1);
        waiting -= 1;
        head.resolve({ kind: "withdrawn" });
        wakeAdmitted();
      }
    }
  };

  const socketFree = () =>
    flying < options.maxInFlight ? Promise.resolve() : new Promise<void>((r) => socketWaiters.push(r));

  /** The number's slot reserved ahead, if one was and it may still be taken. */
  const takeEarlySlot = async (phoneNumberId: string): Promise<number | undefined> => {
    const early = earlySlots.get(phoneNumberId);
    if (!early) return undefined;
    earlySlots.delete(phoneNumberId);
    const slot = await early.slot;
    return slot !== undefined && Date.now() <= slot + SLOT_LATENESS_MS ? slot : undefined;
  };

  const pump = async (phoneNumberId: string, lane: NumberLane) => {
    lane.pumping = true;
    try {
      while (!closed) {
        releaseExpired(lane, Date.now());
        const queued = lane.customer.length + lane.campaign.length;
        if (queued === 0) break;
        let count = Math.min(queued, MAX_BATCH, Math.max(1, Math.floor(lane.limit / 4)));
        let reservation: Pick<Reservation, "firstAtMs" | "intervalMs">;
        const early = await takeEarlySlot(phoneNumberId);
        if (early !== undefined) {
          reservation = { firstAtMs: early, intervalMs: 0 };
          count = 1;
        } else {
          try {
            reservation = await options.rate.reserve(phoneNumberId, lane.limit, count);
          } catch (error) {
            options.log?.warn({ err: error, phoneNumberId }, "send rate store unavailable; retrying in 1 s");
            await sleep(1000);
            continue;
          }
        }
        for (let i = 0; i < count && !closed; i++) {
          const slot = reservation.firstAtMs + i * reservation.intervalMs;
          // The campaign's look (a query) is taken a moment before the slot, so that at
          // the slot its answer is there: a send never waits for it after its slot.
          await sleepUntil(slot - GATE_LEAD_MS);
          void headGoes(lane);
          await sleepUntil(slot);
          await socketFree();
          if (!(await headGoes(lane))) break;
          // Not before the slot, not later than its margin: a missed slot is skipped, never bunched.
          if (Date.now() > slot + SLOT_LATENESS_MS) continue;
          const next = take(lane);
          if (!next) break;
          fly(next, slot);
        }
      }
    } finally {
      lane.pumping = false;
      if (closed) releaseExpired(lane, Date.now());
    }
  };

  return {
    send(item) {
      if (closed) return Promise.resolve({ kind: "released" });
      return new Promise<SendResult>((resolve) => enqueue({ item, since: Date.now(), resolve }));
    },
    expect(phoneNumberId, limit) {
      // A busy lane reserves its slots in batches: only an idle one gains from a slot ahead.
      if (closed || lanes.has(phoneNumberId)) return;
      const early = earlySlots.get(phoneNumberId);
      if (early && Date.now() - early.at < EARLY_SLOT_KEPT_MS) return;
      const slot = options.rate.reserve(phoneNumberId, limit, 1).then(
        (reservation) => reservation.firstAtMs,
        () => undefined,
      );
      earlySlots.set(phoneNumberId, { slot, at: Date.now() });
      track(slot);
    },
    admit(priority) {
      if (closed || (admitWaiters.length === 0 && roomFor(priority))) return Promise.resolve();
      return new Promise<void>((resolve) => admitWaiters.push({ priority, resolve }));
    },
    track,
    settleAfterMs: maxWaitMs + (options.callTimeoutMs ?? 10_000) + 1_000,
    size,
    idle: () => size() === 0 && tracked.size === 0,
    inFlight: () => flying,
    async close(graceMs = 10_000) {
      closed = true;
      for (const lane of lanes.values()) releaseExpired(lane, Date.now());
      wakeAdmitted();
      const deadline = Date.now() + graceMs;
      while (tracked.size > 0 && Date.now() < deadline) {
        await Promise.race([Promise.allSettled([...tracked]), sleep(deadline - Date.now())]);
      }
    },
  };
}

export type { QueuedSend, SendPipeline, SendPriority, SendResult } from "../ports.js";
