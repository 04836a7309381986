import type { QueryClient } from "@tanstack/react-query";
import { useSyncExternalStore } from "react";
import { reportUnauthorized } from "./api";
import { setOnline } from "./connection";
import { notifyFor } from "./notify";
import { createSseParser } from "./sse";

/**
 * Live updates from the account's event stream (`GET /api/events/stream`, Server-Sent Events).
 * Read with fetch rather than EventSource so that a reconnection after a restart of the service
 * sends `Last-Event-ID` itself (EventSource gives up for good on a 5xx) and nothing is lost.
 * On a server without the stream (its route answers 404) the console polls instead: queries use
 * `pollInterval()` as their refetchInterval.
 */
export type LiveMode = "connecting" | "stream" | "polling";

export interface AccountEvent {
  id: string;
  type: string;
  created_at?: string;
  data: Record<string, unknown>;
}

const POLL_MS = 500;
const RETRY_MIN_MS = 250;
const RETRY_MAX_MS = 5_000;

let mode: LiveMode = "connecting";
const listeners = new Set<() => void>();
function setMode(next: LiveMode) {
  if (mode === next) return;
  mode = next;
  for (const l of listeners) l();
}

export function useLiveMode() {
  return useSyncExternalStore(
    (l) => {
      listeners.add(l);
      return () => listeners.delete(l);
    },
    () => mode,
  );
}

/** The refetch interval queries use while there is no event stream. */
export const pollInterval = () => (mode === "polling" ? POLL_MS : false);

/** What each event makes stale. */
export function applyEvent(client: QueryClient, event: AccountEvent) {
  const data = event.data ?? {};
  const conversationId =
    (data.conversation_id as string | undefined) ??
    (data.message as { conversation_id?: string } | undefined)?.conversation_id ??
    (event.type === "conversation.updated" ? (data.id as string | undefined) : undefined);
  switch (event.type) {
    case "message.received":
    case "message.sent":
    case "message.status":
    case "reaction.updated":
    case "conversation.updated":
      void client.invalidateQueries({ queryKey: ["conversations"] });
      void client.invalidateQueries({ queryKey: ["counts"] });
      if (conversationId) {
        void client.invalidateQueries({ queryKey: ["messages", conversationId] });
        void client.invalidateQueries({ queryKey: ["conversation", conversationId] });
      } else {
        void client.invalidateQueries({ queryKey: ["messages"] });
        void client.invalidateQueries({ queryKey: ["conversation"] });
      }
      break;
    case "campaign.updated":
      void client.invalidateQueries({ queryKey: ["campaigns"] });
      break;
    case "flow_run.updated":
      void client.invalidateQueries({ queryKey: ["runs"] });
      void client.invalidateQueries({ queryKey: ["flows"] });
      break;
    default:
      break;
  }
}

/** Keeps the stream open until stop() is called; returns stop. */
export function startLive(client: QueryClient): () => void {
  const controller = new AbortController();
  let lastEventId: string | undefined;
  let delay = RETRY_MIN_MS;

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        controller.signal.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      controller.signal.addEventListener("abort", done);
    });

  const connectOnce = async () => {
    const headers: Record<string, string> = { accept: "text/event-stream" };
    if (lastEventId) headers["last-event-id"] = lastEventId;
    const response = await fetch("/api/events/stream", {
      headers,
      credentials: "same-origin",
      signal: controller.signal,
    });
    if (response.status === 404) {
      setOnline(true);
      setMode("polling");
      return "missing" as const;
    }
    // The session has ended: sign-in, once (retrying could only be refused again).
    if (response.status === 401) {
      reportUnauthorized();
      return "signed-out" as const;
    }
    if (response.status === 403) {
      setMode("connecting");
      return "denied" as const;
    }
    // The last event seen is no longer kept (or never was): start afresh, refreshing the screen.
    if (response.status === 400 && lastEventId) {
      lastEventId = undefined;
      return "ended" as const;
    }
    if (!response.ok || !response.body) throw new Error(`stream answered ${response.status}`);
    setOnline(true);
    setMode("stream");
    // Whatever happened while disconnected is replayed from Last-Event-ID; a first connection
    // refreshes what is on screen instead.
    if (!lastEventId) void client.invalidateQueries();
    delay = RETRY_MIN_MS;
    const parse = createSseParser((e) => {
      if (e.id) lastEventId = e.id;
      try {
        const parsed = JSON.parse(e.data) as AccountEvent;
        const event = { ...parsed, type: parsed.type ?? e.event ?? "" };
        applyEvent(client, event);
        void notifyFor(client, event.type, event.data ?? {}).catch(() => {});
      } catch {
        // Not an event body (a comment-like payload): nothing to apply.
      }
    });
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      parse(value);
    }
    return "ended" as const;
  };

  void (async () => {
    while (!controller.signal.aborted) {
      try {
        const outcome = await connectOnce();
        if (outcome === "missing" || outcome === "signed-out") return;
        if (outcome === "denied") await sleep(RETRY_MAX_MS);
      } catch {
        if (controller.signal.aborted) return;
        setOnline(false);
      }
      await sleep(delay);
      delay = Math.min(delay * 2, RETRY_MAX_MS);
    }
  })();

  return () => {
    controller.abort();
    // Not live any more: the next start (after signing in again) says so until it connects.
    setMode("connecting");
  };
}
