import type { ServerResponse } from "node:http";
import type { FastifyBaseLogger } from "fastify";
import type { Db } from "../db/client.js";
import type { EventHub } from "./hub.js";
import { type Position, readEvents } from "./log.js";

const PAGE = 200;
const FIRST_WAIT_MS = 20;
const MAX_WAIT_MS = 1_000;

export interface StreamOptions {
  db: Db;
  hub: EventHub;
  accountId: string;
  /** Where to start: after this position (null: at the oldest kept event). */
  position: Position | null;
  heartbeatMs: number;
  /** Resolves false when the caller may no longer read the account (signed out, removed); checked at each heartbeat. */
  stillAllowed: () => Promise<boolean>;
  log: FastifyBaseLogger;
}

/**
 * One Server-Sent Events connection: sends the account's events after its
 * position, then each new one as the hub wakes it, and a comment every
 * heartbeat. Reads are coalesced (a wake during a read causes one more read)
 * and wait for the socket to drain, so a slow client falls behind in the log,
 * never in memory.
 */
export class EventStream {
  private position: Position | null;
  private reading = false;
  private again = false;
  private closed = false;
  private waitMs = FIRST_WAIT_MS;
  private retry: NodeJS.Timeout | null = null;
  private readonly heartbeat: NodeJS.Timeout;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly res: ServerResponse,
    private readonly options: StreamOptions,
    private readonly onEnd: (stream: EventStream) => void,
  ) {
    this.position = options.position;
    this.unsubscribe = options.hub.subscribe(options.accountId, () => this.wake());
    this.heartbeat = setInterval(() => void this.beat(), options.heartbeatMs);
    res.on("close", () => this.end());
    // The client may have gone while the request was being authenticated: its "close" has passed.
    if (res.destroyed) this.end();
    else this.wake();
  }

  /** Ends the stream (client gone, shutdown, access revoked). */
  end() {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.heartbeat);
    if (this.retry) clearTimeout(this.retry);
    this.unsubscribe();
    if (!this.res.writableEnded) this.res.end();
    this.onEnd(this);
  }

  wake() {
    if (this.closed) return;
    if (this.reading) {
      this.again = true;
      return;
    }
    void this.pump();
  }

  private async pump() {
    this.reading = true;
    try {
      do {
        this.again = false;
        const batch = await readEvents(this.options.db, {
          accountId: this.options.accountId,
          after: this.position,
          limit: PAGE,
        });
        if (this.closed) return;
        let text = "";
        for (const event of batch.events) text += `id: ${event.id}\ndata: ${JSON.stringify(event)}\n\n`;
        if (batch.position) this.position = batch.position;
        if (text && !this.res.write(text)) await this.drained();
        if (batch.full) this.again = true;
        if (batch.waiting) this.retryLater();
        else this.waitMs = FIRST_WAIT_MS;
      } while (this.again && !this.closed);
    } catch (error) {
      if (this.closed) return;
      this.options.log.error({ err: error }, "event stream read failed");
      this.retryLater();
    } finally {
      this.reading = false;
    }
  }

  /** Events are there but an older transaction is still open: look again shortly (no notification will come). */
  private retryLater() {
    if (this.retry || this.closed) return;
    this.retry = setTimeout(() => {
      this.retry = null;
      this.wake();
    }, this.waitMs);
    this.waitMs = Math.min(this.waitMs * 2, MAX_WAIT_MS);
  }

  private drained() {
    return new Promise<void>((resolve) => {
      const done = () => {
        this.res.off("drain", done);
        this.res.off("close", done);
        resolve();
      };
      this.res.on("drain", done);
      this.res.on("close", done);
    });
  }

  /** Ends the stream now if the caller may no longer read the account (a revocation was heard). */
  async recheck(): Promise<boolean> {
    if (this.closed) return false;
    if (this.res.destroyed) {
      this.end();
      return false;
    }
    let allowed = true;
    try {
      allowed = await this.options.stillAllowed();
    } catch {
      // A database hiccup is not a revocation: keep the stream.
    }
    if (!allowed) this.end();
    return allowed && !this.closed;
  }

  private async beat() {
    if (!(await this.recheck())) return;
    this.res.write(": heartbeat\n\n");
    // Also a safety net for a notification lost with a dropped LISTEN connection.
    this.wake();
  }
}
