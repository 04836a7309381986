import pg from "pg";
import type { Revocations } from "../ports.js";

/** The channel migration 0014's triggers notify, with the user's id, at commit. */
export const REVOKED_CHANNEL = "auth_revoked";

const RECONNECT_MS = 1_000;

/**
 * Tells this instance, at once, that a user's credentials or rights may have
 * changed on any instance: a session ended, an API key they created was
 * deleted, their role changed or they left the account. The database says
 * so (triggers on sessions, api_keys and profiles), so nothing that removes
 * those rows can forget to. One LISTEN connection per instance, opened at
 * start; while it is down and when it comes back, listeners hear `null`:
 * anything may have changed.
 */

export function createRevocations(
  options: pg.ClientConfig,
  log: { error(obj: unknown, message: string): void },
): Revocations {
  const listeners = new Set<(userId: string | null) => void>();
  let client: pg.Client | null = null;
  let retry: NodeJS.Timeout | null = null;
  let closed = false;
  let started = false;

  const emit = (userId: string | null) => {
    for (const listener of listeners) {
      try {
        listener(userId);
      } catch (error) {
        log.error({ err: error }, "revocation listener failed");
      }
    }
  };

  const connect = () => {
    if (closed || client) return;
    const next = new pg.Client(options);
    client = next;
    let live = false;
    const lost = (error?: unknown) => {
      if (client !== next) return;
      client = null;
      if (error) log.error({ err: error }, "revocation LISTEN connection failed");
      void next.end().catch(() => undefined);
      // Notifications sent meanwhile are lost: every cached caller is suspect.
      if (live) emit(null);
      if (closed || retry) return;
      retry = setTimeout(() => {
        retry = null;
        connect();
      }, RECONNECT_MS);
      retry.unref();
    };
    next.on("notification", (message) => {
      if (message.channel === REVOKED_CHANNEL && message.payload) emit(message.payload);
    });
    next.on("error", lost);
    next.on("end", () => lost());
    next
      .connect()
      .then(() => next.query(`listen ${REVOKED_CHANNEL}`))
      .then(() => {
        if (client !== next) return;
        live = true;
        emit(null);
      })
      .catch(lost);
  };

  return {
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    start() {
      if (started) return;
      started = true;
      connect();
    },
    async close() {
      closed = true;
      listeners.clear();
      if (retry) clearTimeout(retry);
      const last = client;
      client = null;
      await last?.end().catch(() => undefined);
    },
  };
}

export type { Revocations } from "../ports.js";
