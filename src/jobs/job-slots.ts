/**
 * The instance's job slots (WORKER_CONCURRENCY), shared by graphile-worker's
 * jobs and the jobs the instance starts itself (local-start.ts), so that the
 * two together never run more jobs at once than the instance has database
 * connections kept for them. graphile-worker's jobs wait for a slot; a job
 * started here is only offered slots nobody waits for.
 */
export interface JobSlots {
  /** Waits for a slot (graphile-worker's jobs, in the order they came). */
  take(): Promise<void>;
  /** Slots free now that no job waits for. */
  available(): number;
  /** Takes a slot at once (a job already locked for this instance on an offer of available()). */
  claim(): void;
  give(): void;
}

export function createJobSlots(size: number): JobSlots {
  let used = 0;
  const waiting: Array<() => void> = [];
  return {
    take() {
      if (used < size && waiting.length === 0) {
        used += 1;
        return Promise.resolve();
      }
      return new Promise<void>((resolve) => waiting.push(resolve));
    },
    available: () => (waiting.length > 0 ? 0 : Math.max(0, size - used)),
    claim() {
      used += 1;
    },
    give() {
      // The slot passes straight to the job that waited longest (unless claims had overshot).
      const next = used <= size ? waiting.shift() : undefined;
      if (next) next();
      else used -= 1;
    },
  };
}
