import type { AckFirst } from "../ports.js";

/**
 * Acknowledging first. Meta's webhook deliveries are answered as soon as their
 * job is stored (src/messaging/webhook.ts); the jobs run afterwards. On an
 * instance that also runs jobs, both share the cores and PostgreSQL, and a
 * backlog keeps every job slot busy: each answer then waits behind the jobs'
 * statements, and the deliveries Meta can hand over in a burst fall to a
 * fraction of what the same instance takes when its jobs run elsewhere. Meta
 * slows down and redelivers when its deliveries are answered slowly, so a
 * burst would wait at Meta, where it reaches nobody, instead of in our queue.
 *
 * So the jobs step back while the deliveries overlap. The webhook route
 * reports each answer's time, and every window (100 ms) the times answered
 * in it are summed: over the window's length, that is how many deliveries
 * were waiting for their answer at once, on average (Little's law). A quiet
 * instance sees well under one; `overlap` (2) or more means deliveries come
 * faster than they are answered one by one, because they come fast or
 * because the jobs slow each answer. Such a window halves the jobs that may
 * run at once, down to `floor`; any other window lets one more run, up to
 * the instance's WORKER_CONCURRENCY. So the jobs take what the answers leave
 * them. A job holds its turn for `turnMs` (a second) at most and then runs
 * on uncounted, so a long job (an import, a campaign's claiming) cannot hold
 * the last turn; jobs already running are never stopped.
 */

export interface AckFirstOptions {
  /** The most jobs at once: the worker pool's concurrency. */
  max: number;
  /** The fewest jobs at once however slow the answers are: the backlog always moves. */
  floor?: number;
  /** Deliveries waiting for their answer at once, on average over a window, that make the jobs step back. */
  overlap?: number;
  windowMs?: number;
  /** A job holds its turn this long at most: a longer one runs on, uncounted. */
  turnMs?: number;
  /** Milliseconds, monotonic (tests drive it with `tick`). */
  now?: () => number;
  /** Roll the windows with a timer (tests turn it off and call `tick`). */
  timer?: boolean;
}

export interface AckFirstGate extends AckFirst {
  /** Runs a job's work when its turn comes. */
  run<T>(work: () => Promise<T>): Promise<T>;
  /** Jobs allowed at once now. */
  readonly limit: number;
  /** Jobs holding a turn now (running, and not running for longer than `turnMs`). */
  readonly running: number;
  /** Jobs waiting for their turn. */
  readonly waiting: number;
  /** Closes the windows that ended by `now` and lets in whoever may run. */
  tick(): void;
  /** Stops the timer and lets every waiting job run (the instance is stopping). */
  close(): void;
}

export function createAckFirst(options: AckFirstOptions): AckFirstGate {
  const max = Math.max(1, options.max);
  const floor = Math.min(max, Math.max(1, options.floor ?? 1));
  const overlap = options.overlap ?? 2;
  const windowMs = options.windowMs ?? 100;
  const turnMs = options.turnMs ?? 1000;
  const now = options.now ?? (() => performance.now());

  let limit = max;
  /** The jobs that hold a turn, by when they got it. */
  const turns = new Set<{ since: number }>();
  /** Jobs waiting for a turn, each given its turn as it is let in. */
  const waiters: Array<(turn: { since: number }) => void> = [];
  /** The answers' times summed since the window began. */
  let answered = 0;
  let windowStart = now();

  const take = () => {
    const turn = { since: now() };
    turns.add(turn);
    return turn;
  };
  const admit = () => {
    while (waiters.length > 0 && turns.size < limit) waiters.shift()!(take());
  };

  const tick = () => {
    const at = now();
    const ended = Math.floor((at - windowStart) / windowMs);
    if (ended > 0) {
      // A late timer closes several windows at once: the answers are spread over them.
      const slowed = answered / (ended * windowMs) >= overlap;
      limit = slowed ? Math.max(floor, limit >> 1) : Math.min(max, limit + ended);
      answered = 0;
      windowStart += ended * windowMs;
    }
    // A long job (an import, a campaign's claiming) runs on, but no longer holds a turn.
    for (const turn of turns) if (at - turn.since >= turnMs) turns.delete(turn);
    admit();
  };

  const interval = options.timer === false ? undefined : setInterval(tick, windowMs);
  interval?.unref();

  return {
    acknowledged(ms) {
      answered += ms;
    },
    async run(work) {
      const turn =
        turns.size < limit && waiters.length === 0
          ? take()
          : await new Promise<{ since: number }>((resolve) => waiters.push(resolve));
      try {
        return await work();
      } finally {
        turns.delete(turn);
        admit();
      }
    },
    get limit() {
      return limit;
    },
    get running() {
      return turns.size;
    },
    get waiting() {
      return waiters.length;
    },
    tick,
    close() {
      if (interval) clearInterval(interval);
      limit = Number.POSITIVE_INFINITY;
      admit();
    },
  };
}
