import { sql } from "drizzle-orm";
import type { Db } from "./client.js";

/**
 * What ANALYZE keeps of a text column (pg_stats): its most common values with
 * their shares of the rows, and the histogram that samples the rest. Enough
 * to tell a word found in most rows from one found in few.
 */
export interface ColumnSample {
  common: Array<{ value: string; share: number }>;
  /** Sampled values of the rows that are not among the common ones (lower-cased). */
  histogram: string[];
  /** The rows' share that the histogram stands for. */
  histogramShare: number;
}

const EMPTY: ColumnSample = { common: [], histogram: [], histogramShare: 0 };

/** How long a column's sample is reused before pg_stats is read again. */
export const SAMPLE_TTL_MS = 10 * 60_000;

const samples = new WeakMap<Db, Map<string, { at: number; sample: Promise<ColumnSample> }>>();

/**
 * The column's sample, read from pg_stats at most once per SAMPLE_TTL_MS for
 * each database handle. Empty before the table's first ANALYZE (autovacuum
 * runs one once it has grown), or when the read fails.
 */
export function columnSample(db: Db, table: string, column: string, now = Date.now()): Promise<ColumnSample> {
  let cache = samples.get(db);
  if (!cache) {
    cache = new Map();
    samples.set(db, cache);
  }
  const key = `${table}.${column}`;
  const kept = cache.get(key);
  if (kept && now - kept.at < SAMPLE_TTL_MS) return kept.sample;
  const sample = readSample(db, table, column).catch(() => EMPTY);
  cache.set(key, { at: now, sample });
  return sample;
}

async function readSample(db: Db, table: string, column: string): Promise<ColumnSample> {
  const { rows } = await db.execute<{
    common: string[] | null;
    shares: number[] | null;
    histogram: string[] | null;
    null_share: number;
  }>(sql`select most_common_vals::text::text[] as common, most_common_freqs as shares,
                histogram_bounds::text::text[] as histogram, null_frac as null_share
           from pg_stats
          where schemaname = current_schema() and tablename = ${table} and attname = ${column}
            and not inherited`);
  const row = rows[0];
  if (!row) return EMPTY;
  const common = (row.common ?? []).map((value, i) => ({
    value: value.toLowerCase(),
    share: Number(row.shares?.[i] ?? 0),
  }));
  const commonShare = common.reduce((sum, c) => sum + c.share, 0);
  return {
    common,
    histogram: (row.histogram ?? []).map((value) => value.toLowerCase()),
    histogramShare: Math.max(0, 1 - commonShare - Number(row.null_share)),
  };
}

/** The estimated share of the column's rows that contain `part` (lower-cased), as the planner reckons it. */
export function shareContaining(sample: ColumnSample, part: string): number {
  const needle = part.toLowerCase();
  const common = sample.common.reduce((sum, c) => sum + (c.value.includes(needle) ? c.share : 0), 0);
  const { histogram } = sample;
  const sampled =
    histogram.length === 0 ? 0 : histogram.filter((v) => v.includes(needle)).length / histogram.length;
  return common + sampled * sample.histogramShare;
}
