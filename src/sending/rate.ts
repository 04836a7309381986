import { Redis } from "ioredis";
import type pg from "pg";
import { commitUnflushedText } from "../db/commit.js";

/**
 * Each phone number's send schedule, shared by every instance: a send takes a
 * slot, slots are `(1000 + SLOT_MARGIN_MS) / rate` ms apart, and a send is
 * written to its connection within SLOT_LATENESS_MS of its slot or not at all
 * (pipeline.ts checks the slot, graph.ts checks again when the connection is
 * ready, so a new connection or a busy moment cannot push a send late; one that
 * misses waits for another slot). So sends n and n + rate are written at least
 * 1000 + SLOT_MARGIN_MS - SLOT_LATENESS_MS ms apart: no one-second window holds
 * more than `rate` sends, whichever instances made them, even with up to 50 ms
 * of jitter on the way to Meta. The price: a number sends at most 1000 / 1080
 * of its rate (74 a second at 80).
 *
 * A fixed-window counter (rate-limiter-flexible's stores) lets twice the rate
 * through across a window's edge, so the schedule is our own: one statement in
 * PostgreSQL (`reserve_send_slots`, migration 0013) or one Lua script in Redis.
 *
 * The rate itself is AIMD: Meta's throughput errors halve it (at most once a
 * second), and it climbs back by RATE_INCREASE_SHARE of the configured rate
 * each second.
 */

export const SLOT_MARGIN_MS = 80;
/** How late after its slot a send may still leave; a later one waits for another slot. */
export const SLOT_LATENESS_MS = 30;
/** Share of the configured rate regained each second after a slow-down. */
export const RATE_INCREASE_SHARE = 0.05;

export interface Reservation {
  /** When the first reserved slot is (epoch ms, the store's clock: instances' clocks are NTP-close). */
  firstAtMs: number;
  /** Between two reserved slots. */
  intervalMs: number;
  /** The number's rate now (messages a second): its configured one, or less after throughput errors. */
  rate: number;
}

export interface SendRate {
  /** Takes `count` consecutive slots of the number's schedule. */
  reserve(phoneNumberId: string, limit: number, count: number): Promise<Reservation>;
  /** Meta said "too fast": halves the number's rate (once a second at most); answers the new rate. */
  slowDown(phoneNumberId: string, limit: number): Promise<number>;
  close(): Promise<void>;
  readonly store: "postgres" | "redis";
}

/**
 * Reserves slots in a transaction that commits without waiting for its WAL to
 * reach the disk (see db/commit.ts): the number's `send_rates` row stays locked
 * until the commit, and with a flush each reservation of a busy number waited
 * for the previous one's. A crash of the database can lose its last fraction of
 * a second of reservations, as a Redis store loses what it had not saved: sends
 * made on those slots are then not counted once it is back. A restart that
 * outlasts the slots' one-second window overlaps nothing; after a quicker one,
 * Meta's throughput error and the rate's slow-down (AIMD) cover the rest.
 */
const RESERVE_UNFLUSHED = `select first_at_ms, interval_ms, current_rate, ${commitUnflushedText} as unflushed
    from reserve_send_slots($1, $2, $3, $4, $5)`;

const increase = (limit: number) => Math.max(1, limit * RATE_INCREASE_SHARE);

export function postgresSendRate(pool: pg.Pool): SendRate {
  return {
    store: "postgres",
    async reserve(phoneNumberId, limit, count) {
      const { rows } = await pool.query<{ first_at_ms: number; interval_ms: number; current_rate: number }>(
        RESERVE_UNFLUSHED,
        [phoneNumberId, limit, count, SLOT_MARGIN_MS, increase(limit)],
      );
      const row = rows[0];
      if (!row) throw new Error("reserve_send_slots answered nothing");
      return { firstAtMs: row.first_at_ms, intervalMs: row.interval_ms, rate: row.current_rate };
    },
    async slowDown(phoneNumberId, limit) {
      const { rows } = await pool.query<{ rate: number }>("select slow_send_rate($1, $2, $3) as rate", [
        phoneNumberId,
        limit,
        increase(limit),
      ]);
      return rows[0]?.rate ?? limit;
    },
    async close() {},
  };
}

// Times in epoch milliseconds from Redis's own clock (TIME).
const RESERVE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local limit, count, margin, inc = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local v = redis.call('HMGET', KEYS[1], 'next', 'rate', 'changed')
local nxt = tonumber(v[1]) or now
local rate = tonumber(v[2]) or limit
local changed = tonumber(v[3]) or now
local eff = math.min(limit, rate + inc * (now - changed) / 1000)
local step = (1000 + margin) / eff
local first = math.max(nxt, now)
redis.call('HSET', KEYS[1], 'next', tostring(first + step * count), 'rate', tostring(rate), 'changed', tostring(changed))
redis.call('PEXPIRE', KEYS[1], 3600000)
return { tostring(first), tostring(step), tostring(eff) }`;

const SLOW_DOWN = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local limit, inc = tonumber(ARGV[1]), tonumber(ARGV[2])
local v = redis.call('HMGET', KEYS[1], 'next', 'rate', 'changed')
local rate = tonumber(v[2]) or limit
local changed = tonumber(v[3]) or now
local eff = math.min(limit, rate + inc * (now - changed) / 1000)
if v[2] and changed > now - 1000 and rate < limit then return tostring(eff) end
local slowed = math.max(1, eff / 2)
redis.call('HSET', KEYS[1], 'next', v[1] or tostring(now), 'rate', tostring(slowed), 'changed', tostring(now))
redis.call('PEXPIRE', KEYS[1], 3600000)
return tostring(slowed)`;

type ScriptedRedis = Redis & {
  reserveSendSlots(key: string, ...args: number[]): Promise<string[]>;
  slowSendRate(key: string, ...args: number[]): Promise<string>;
};

export function redisSendRate(url: string): SendRate {
  const client = new Redis(url, {
    connectionName: "wa-inbox-send-rate",
    maxRetriesPerRequest: 2,
    retryStrategy: (attempt) => Math.min(attempt * 200, 5000),
  }) as ScriptedRedis;
  // The URL may carry a password: only the message is kept (ioredis's errors never include it).
  client.on("error", () => undefined);
  client.defineCommand("reserveSendSlots", { numberOfKeys: 1, lua: RESERVE });
  client.defineCommand("slowSendRate", { numberOfKeys: 1, lua: SLOW_DOWN });
  const key = (phoneNumberId: string) => `wa-inbox:send-rate:${phoneNumberId}`;
  return {
    store: "redis",
    async reserve(phoneNumberId, limit, count) {
      const [first, interval, rate] = await client.reserveSendSlots(
        key(phoneNumberId),
        limit,
        count,
        SLOT_MARGIN_MS,
        increase(limit),
      );
      return { firstAtMs: Number(first), intervalMs: Number(interval), rate: Number(rate) };
    },
    async slowDown(phoneNumberId, limit) {
      return Number(await client.slowSendRate(key(phoneNumberId), limit, increase(limit)));
    },
    async close() {
      await client.quit().catch(() => client.disconnect());
    },
  };
}
