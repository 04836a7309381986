import pg from "pg";
import type { EventHub } from "../ports.js";
import { EVENTS_CHANNEL } from "./types.js";

/**
 * One LISTEN connection per instance, opened when the first stream
 * subscribes. A notification (sent by the event triggers at commit, on any
 * instance) wakes this instance's subscribers of that account; they then read
 * the log, which is the truth: a notification carries only the account id.
 * After the connection drops and comes back, every subscriber is woken, since
 * notifications sent meanwhile are lost.
 */

const RECONNECT_MS = 1_000;

export function createEventHub(
  options: pg.ClientConfig,
  log: { error(obj: unknown, message: string): void },
): EventHub {
  const subscribers = new Map<string, Set<() => void>>();
  let client: pg.Client | null = null;
  let connecting: Promise<void> | null = null;
  let retry: NodeJS.Timeout | null = null;
  let closed = false;

  const wakeAll = () => {
    for (const set of subscribers.values()) for (const wake of set) wake();
  };

  const connect = () => {
    if (closed || client || connecting) return;
    const next = new pg.Client(options);
    next.on("notification", (message) => {
      if (message.channel !== EVENTS_CHANNEL || !message.payload) return;
      for (const wake of subscribers.get(message.payload) ?? []) wake();
    });
    next.on("error", (error) => {
      log.error({ err: error }, "event stream LISTEN connection failed");
      drop(next);
    });
    next.on("end", () => drop(next));
    connecting = next
      .connect()
      .then(() => next.query(`listen ${EVENTS_CHANNEL}`))
      .then(() => {
        connecting = null;
        if (closed) {
          void next.end().catch(() => undefined);
          return;
        }
        client = next;
        // Anything committed while we were not listening is in the log: look.
        wakeAll();
      })
      .catch((error: unknown) => {
        connecting = null;
        log.error({ err: error }, "event stream LISTEN connection failed");
        void next.end().catch(() => undefined);
        scheduleReconnect();
      });
  };

  const drop = (which: pg.Client) => {
    if (client !== which) return;
    client = null;
    void which.end().catch(() => undefined);
    scheduleReconnect();
  };

  const scheduleReconnect = () => {
    if (closed || retry || subscribers.size === 0) return;
    retry = setTimeout(() => {
      retry = null;
      connect();
    }, RECONNECT_MS);
    retry.unref();
  };

  return {
    subscribe(accountId, wake) {
      let set = subscribers.get(accountId);
      if (!set) {
        set = new Set();
        subscribers.set(accountId, set);
      }
      set.add(wake);
      connect();
      return () => {
        const current = subscribers.get(accountId);
        current?.delete(wake);
        if (current?.size === 0) subscribers.delete(accountId);
      };
    },
    async close() {
      closed = true;
      subscribers.clear();
      if (retry) clearTimeout(retry);
      await connecting?.catch(() => undefined);
      const last = client;
      client = null;
      await last?.end().catch(() => undefined);
    },
  };
}

export type { EventHub } from "../ports.js";
