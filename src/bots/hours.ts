import { eq } from "drizzle-orm";
import type { z } from "zod";
import type { BusinessHours as BusinessHoursJson } from "../contracts/account.js";
import type { DbOrTx } from "../db/client.js";
import { businessHours, type WeeklyHours } from "../db/schema/index.js";
import { ApiError } from "../http/errors.js";

/**
 * Business hours (product.md section 20): weekly opening ranges on the wall
 * clock of an IANA timezone, whole-day holidays, and an away message. Every
 * conversion between an instant and the wall clock goes through Intl, so
 * daylight-saving changes fall where the timezone database puts them.
 */

export const DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"] as const;
export type Day = (typeof DAYS)[number];

export interface BusinessHours {
  timezone: string;
  weekly: WeeklyHours;
  holidays: string[];
  awayMessage: string | null;
}

const TIME = /^([01]\d|2[0-3]):([0-5]\d)$|^24:00$/;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === "object" && !Array.isArray(v);

const minutesOf = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

const bad = (message: string) => new ApiError(400, message);

/** True when Intl knows the timezone (an IANA name such as `Europe/Berlin`, or `UTC`). */
export function isTimezone(name: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/**
 * The PUT body, checked field by field (400 naming the first bad one): a known
 * timezone; for each day, ranges `["HH:MM", "HH:MM"]` that start before they
 * end (`24:00` ends a day) and do not overlap; holidays as real `YYYY-MM-DD`
 * dates; an away message of 1 to 4096 characters, or null.
 */
export function readBusinessHours(body: Record<string, unknown>): BusinessHours {
  for (const key of Object.keys(body)) {
    if (!["timezone", "weekly", "holidays", "away_message"].includes(key)) {
      throw bad(`${key}: unknown field`);
    }
  }
  const { timezone, weekly, holidays, away_message: away } = body;
  if (typeof timezone !== "string" || timezone.trim() === "") {
    throw bad("timezone: must be an IANA timezone such as Europe/Berlin");
  }
  if (!isTimezone(timezone.trim())) throw bad(`timezone: unknown timezone "${timezone}"`);
  if (!isObject(weekly)) throw bad("weekly: must be an object of days (mon..sun) to ranges");
  const days: WeeklyHours = {};
  for (const [day, ranges] of Object.entries(weekly)) {
    if (!DAYS.includes(day as Day))
      throw bad(`weekly.${day}: unknown day (use mon, tue, wed, thu, fri, sat, sun)`);
    if (!Array.isArray(ranges)) throw bad(`weekly.${day}: must be an array of ["HH:MM", "HH:MM"] ranges`);
    const checked: [string, string][] = [];
    ranges.forEach((range, i) => {
      const field = `weekly.${day}[${i}]`;
      if (
        !Array.isArray(range) ||
        range.length !== 2 ||
        !range.every((t): t is string => typeof t === "string" && TIME.test(t))
      ) {
        throw bad(`${field}: must be ["HH:MM", "HH:MM"] (24-hour times)`);
      }
      const [from, to] = range as [string, string];
      if (from === "24:00" || minutesOf(from) >= minutesOf(to)) {
        throw bad(`${field}: the range ends before it starts (${from} to ${to})`);
      }
      checked.push([from, to]);
    });
    const sorted = [...checked].sort((a, b) => minutesOf(a[0]) - minutesOf(b[0]));
    for (let i = 1; i < sorted.length; i++) {
      if (minutesOf(sorted[i]![0]) < minutesOf(sorted[i - 1]![1])) {
        throw bad(`weekly.${day}: ranges overlap (${sorted[i - 1]!.join("-")} and ${sorted[i]!.join("-")})`);
      }
    }
    days[day as Day] = sorted;
  }
  const dates: string[] = [];
  if (holidays !== undefined) {
    if (!Array.isArray(holidays) || holidays.length > 366) {
      throw bad("holidays: must be an array of at most 366 dates (YYYY-MM-DD)");
    }
    holidays.forEach((d, i) => {
      if (typeof d !== "string" || !isRealDate(d)) throw bad(`holidays[${i}]: must be a date YYYY-MM-DD`);
      if (!dates.includes(d)) dates.push(d);
    });
  }
  if (away !== undefined && away !== null) {
    if (typeof away !== "string" || away.trim() === "" || away.length > 4096) {
      throw bad("away_message: must be a text of 1 to 4096 characters, or null");
    }
  }
  return {
    timezone: timezone.trim(),
    weekly: days,
    holidays: dates.sort(),
    awayMessage: typeof away === "string" ? away.trim() : null,
  };
}

function isRealDate(d: string): boolean {
  const m = DATE.exec(d);
  if (!m) return false;
  const at = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return at.toISOString().slice(0, 10) === d;
}

interface WallClock {
  date: string;
  day: Day;
  minutes: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();
function formatter(timezone: string) {
  let f = formatters.get(timezone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone: timezone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
    });
    formatters.set(timezone, f);
  }
  return f;
}

function wallParts(at: number, timezone: string) {
  const parts: Record<string, number> = {};
  for (const p of formatter(timezone).formatToParts(new Date(at))) {
    if (p.type !== "literal") parts[p.type] = Number(p.value);
  }
  return parts as { year: number; month: number; day: number; hour: number; minute: number; second: number };
}

/** The wall clock of the timezone at an instant. */
export function wallClock(at: Date, timezone: string): WallClock {
  const p = wallParts(at.getTime(), timezone);
  const date = `${String(p.year).padStart(4, "0")}-${String(p.month).padStart(2, "0")}-${String(p.day).padStart(2, "0")}`;
  return {
    date,
    day: DAYS[new Date(Date.UTC(p.year, p.month - 1, p.day)).getUTCDay()]!,
    minutes: p.hour * 60 + p.minute,
  };
}

/** How far the timezone's wall clock is ahead of UTC at an instant (ms), as Intl says. */
function offsetAt(at: number, timezone: string): number {
  const p = wallParts(at, timezone);
  const asUtc = Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second);
  return asUtc - Math.floor(at / 1000) * 1000;
}

/**
 * The instant a wall-clock time of a date has in the timezone. A time the
 * clocks skip (spring forward) lands after the gap; a time they repeat takes
 * its first occurrence.
 */
export function instantOf(date: string, minutes: number, timezone: string): number {
  const [y, m, d] = date.split("-").map(Number) as [number, number, number];
  const guess = Date.UTC(y, m - 1, d, 0, minutes);
  const before = offsetAt(guess - 43_200_000, timezone);
  const after = offsetAt(guess + 43_200_000, timezone);
  const valid = [guess - before, guess - after].filter((at) => offsetAt(at, timezone) === guess - at);
  // No valid instant: the time falls in a gap, and is read with the offset before it.
  return valid.length ? Math.min(...valid) : guess - before;
}

/** Open at this instant: not a holiday, and inside one of the day's ranges (wall clock). */
export function isOpenAt(hours: BusinessHours, at: Date): boolean {
  const wall = wallClock(at, hours.timezone);
  if (hours.holidays.includes(wall.date)) return false;
  return (hours.weekly[wall.day] ?? []).some(
    ([from, to]) => wall.minutes >= minutesOf(from) && wall.minutes < minutesOf(to),
  );
}

const addDays = (date: string, n: number) =>
  new Date(Date.parse(`${date}T00:00:00Z`) + n * 86_400_000).toISOString().slice(0, 10);

/** Whether the business was open at some moment in (from, to]: a closed period ended in between. */
export function wasOpenBetween(hours: BusinessHours, from: Date, to: Date): boolean {
  if (to <= from) return false;
  let date = wallClock(from, hours.timezone).date;
  const last = wallClock(to, hours.timezone).date;
  // A year of days at most: a business closed all that time has no period to tell apart.
  for (let i = 0; i <= 370 && date <= last; i++, date = addDays(date, 1)) {
    if (hours.holidays.includes(date)) continue;
    const day = DAYS[new Date(`${date}T00:00:00Z`).getUTCDay()]!;
    for (const [start, end] of hours.weekly[day] ?? []) {
      const opens = instantOf(date, minutesOf(start), hours.timezone);
      const closes = instantOf(date, minutesOf(end), hours.timezone);
      if (opens <= to.getTime() && closes > from.getTime()) return true;
    }
  }
  return false;
}

export async function getBusinessHours(db: DbOrTx, accountId: string): Promise<BusinessHours | null> {
  const [row] = await db.select().from(businessHours).where(eq(businessHours.accountId, accountId));
  return row
    ? { timezone: row.timezone, weekly: row.weekly, holidays: row.holidays, awayMessage: row.awayMessage }
    : null;
}

export async function putBusinessHours(db: DbOrTx, accountId: string, hours: BusinessHours, now: Date) {
  const values = {
    timezone: hours.timezone,
    weekly: hours.weekly,
    holidays: hours.holidays,
    awayMessage: hours.awayMessage,
    updatedAt: now,
  };
  await db
    .insert(businessHours)
    .values({ accountId, ...values })
    .onConflictDoUpdate({ target: businessHours.accountId, set: values });
  return hours;
}

/** The business hours as the API shows them; null when the account never set any (always open). */
export const toBusinessHoursJson = (
  h: BusinessHours | null,
  now: Date,
): z.infer<typeof BusinessHoursJson> | null =>
  h
    ? {
        timezone: h.timezone,
        weekly: Object.fromEntries(DAYS.map((d) => [d, h.weekly[d] ?? []])),
        holidays: h.holidays,
        away_message: h.awayMessage,
        open_now: isOpenAt(h, now),
      }
    : null;
