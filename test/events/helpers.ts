import type { AddressInfo } from "node:net";
import { createCustomer } from "../../src/upstream/sandbox/customer.js";
import { startSandbox } from "../../src/upstream/sandbox/server.js";
import { insertChannelConfig, uniqueDigits } from "../helpers/fixtures.js";
import { createTestApp, signUpWithAccount, type TestApp, type TestUser } from "../helpers/harness.js";

/** JSON read back from the API, accessed loosely in assertions. */
// biome-ignore lint/suspicious/noExplicitAny: test access into parsed JSON
export type Json = any;

export const APP_SECRET = "events-test-app-secret";

export const baseUrl = (t: TestApp) => `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;

/** The app listening on loopback, wired to a sandbox upstream. */
export async function createWorld(options: Parameters<typeof createTestApp>[0] = {}) {
  const sandbox = await startSandbox();
  const t = await createTestApp({
    ...options,
    config: { appSecret: APP_SECRET, graphApiUrl: sandbox.url, ...options.config },
    upstreamTimeoutMs: 3000,
  });
  await t.app.listen({ port: 0, host: "127.0.0.1" });
  return {
    t,
    sandbox,
    async close() {
      await t.close();
      await sandbox.close();
    },
  };
}
export type World = Awaited<ReturnType<typeof createWorld>>;

export interface Business {
  user: TestUser;
  accountId: string;
  phoneNumberId: string;
}

/** An account with a connected channel that the sandbox knows. */
export async function business(w: World): Promise<Business> {
  const { user, accountId } = await signUpWithAccount(w.t.app);
  const { row, accessToken } = await insertChannelConfig(w.t, { accountId, userId: user.id });
  w.sandbox.addNumber({ phoneNumberId: row.phoneNumberId, accessToken });
  return { user, accountId, phoneNumberId: row.phoneNumberId };
}

/** A WhatsApp customer writing to the business through the real webhook (over HTTP). */
export function customerOf(w: World, b: Business, target: TestApp = w.t, name = "Sheena Nelson") {
  return createCustomer({
    webhookUrl: `${baseUrl(target)}/api/messaging/webhook`,
    appSecret: APP_SECRET,
    phoneNumberId: b.phoneNumberId,
    waId: uniqueDigits(11),
    name,
  });
}

/** Waits until the work a request started in the background is done. */
export async function settle(t: TestApp) {
  await t.app.deps.jobs.drain();
}

export async function api(
  t: TestApp,
  user: TestUser,
  method: "GET" | "POST" | "PATCH" | "DELETE",
  url: string,
  payload?: unknown,
) {
  return t.app.inject({
    method,
    url,
    headers: user.headers,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
}

/** Every kept event of the caller's account, oldest first. */
export async function allEvents(t: TestApp, user: TestUser): Promise<Json[]> {
  const events: Json[] = [];
  let after: string | null = null;
  for (;;) {
    const response = await api(t, user, "GET", `/api/events?limit=500${after ? `&after=${after}` : ""}`);
    if (response.statusCode !== 200) throw new Error(`GET /api/events: ${response.body}`);
    const body = response.json();
    events.push(...body.events);
    if (!body.has_more) return events;
    after = body.next_after;
  }
}

export interface SseEvent {
  id: string | null;
  data: Json;
}

/** A Server-Sent Events client over real HTTP that keeps what it receives. */
export async function openStream(url: string, headers: Record<string, string>) {
  const abort = new AbortController();
  const response = await fetch(url, { headers, signal: abort.signal });
  const events: SseEvent[] = [];
  const comments: string[] = [];
  let waiters: Array<() => void> = [];
  let ended = false;
  const notify = () => {
    const current = waiters;
    waiters = [];
    for (const w of current) w();
  };

  const finished = (async () => {
    if (!response.body) return;
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for await (const chunk of response.body) {
        buffer += decoder.decode(chunk as Uint8Array, { stream: true });
        let cut = buffer.indexOf("\n\n");
        while (cut >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          let id: string | null = null;
          let data = "";
          for (const line of block.split("\n")) {
            if (line.startsWith(":")) comments.push(line.slice(1).trim());
            else if (line.startsWith("id: ")) id = line.slice(4);
            else if (line.startsWith("data: ")) data += line.slice(6);
          }
          if (data) events.push({ id, data: JSON.parse(data) });
          notify();
          cut = buffer.indexOf("\n\n");
        }
      }
    } catch {
      // Aborted by close().
    } finally {
      ended = true;
      notify();
    }
  })();

  const waitFor = async (check: () => boolean) => {
    while (!check()) {
      if (ended) throw new Error("the stream ended");
      await new Promise<void>((resolve) => waiters.push(resolve));
    }
  };

  return {
    status: response.status,
    headers: response.headers,
    events,
    comments,
    /** Resolves with the first received event (from `from` on) that matches. */
    async next(match: (e: SseEvent) => boolean, from = 0): Promise<SseEvent> {
      let found: SseEvent | undefined;
      await waitFor(() => {
        found = events.slice(from).find(match);
        return found !== undefined;
      });
      return found!;
    },
    waitFor,
    /** Resolves when the server ends the stream. */
    ended: finished,
    isEnded: () => ended,
    close() {
      abort.abort();
      return finished;
    },
  };
}
export type Stream = Awaited<ReturnType<typeof openStream>>;
