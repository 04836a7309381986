import type { QueryClient } from "@tanstack/react-query";
import { useSyncExternalStore } from "react";
import { api } from "./api";
import { contactLabel } from "./format";
import type { Conversation, Me, Message } from "./types";

/**
 * Browser notifications and a short sound for what is the agent's own: a customer's new message in
 * a conversation assigned to them, and a conversation newly assigned to them. Permission is asked
 * once, when the agent turns them on (the bell in the sidebar); the same bell turns them off (kept
 * in this browser).
 */
const KEY = "wa-inbox.notifications";
const listeners = new Set<() => void>();

type Pref = "on" | "off";
function readPref(): Pref {
  try {
    return localStorage.getItem(KEY) === "off" ? "off" : "on";
  } catch {
    return "on";
  }
}
let pref: Pref = typeof localStorage === "undefined" ? "on" : readPref();

const supported = () => typeof window !== "undefined" && "Notification" in window;
const permission = () => (supported() ? Notification.permission : "denied");

export type NotifyState = "unsupported" | "blocked" | "ask" | "on" | "off";
function state(): NotifyState {
  if (!supported()) return "unsupported";
  if (permission() === "denied") return "blocked";
  if (pref === "off") return "off";
  return permission() === "granted" ? "on" : "ask";
}
let current: NotifyState = state();
const changed = () => {
  current = state();
  for (const l of listeners) l();
};

export function useNotifyState(): NotifyState {
  return useSyncExternalStore(
    (l) => {
      listeners.add(l);
      return () => listeners.delete(l);
    },
    () => current,
  );
}

/** The bell: asks for permission the first time, then switches notifications off and on. */
export async function toggleNotifications() {
  if (!supported()) return;
  if (current === "ask") {
    await Notification.requestPermission();
    pref = "on";
  } else {
    pref = current === "on" ? "off" : "on";
  }
  try {
    localStorage.setItem(KEY, pref);
  } catch {
    // No storage: the choice lasts for this page.
  }
  changed();
}

let audio: AudioContext | undefined;
/** Two short soft tones, made here (no sound file to load). */
function chime() {
  try {
    audio ??= new AudioContext();
    const now = audio.currentTime;
    for (const [i, frequency] of [880, 1320].entries()) {
      const oscillator = audio.createOscillator();
      const gain = audio.createGain();
      oscillator.frequency.value = frequency;
      gain.gain.setValueAtTime(0.0001, now + i * 0.12);
      gain.gain.exponentialRampToValueAtTime(0.15, now + i * 0.12 + 0.02);
      gain.gain.exponentialRampToValueAtTime(0.0001, now + i * 0.12 + 0.2);
      oscillator.connect(gain).connect(audio.destination);
      oscillator.start(now + i * 0.12);
      oscillator.stop(now + i * 0.12 + 0.22);
    }
  } catch {
    // No audio here: the notification alone.
  }
}

function show(title: string, body: string, conversationId: string) {
  if (current !== "on") return;
  const n = new Notification(title, { body, tag: `conversation-${conversationId}` });
  n.onclick = () => {
    window.focus();
    window.history.pushState(null, "", `/inbox/${conversationId}`);
    window.dispatchEvent(new PopStateEvent("popstate"));
  };
  chime();
}

/** Who each conversation was assigned to when last seen, to tell a new assignment. */
const assignees = new Map<string, string | null>();

/** Called for each event of the stream (after the queries it makes stale). */
export async function notifyFor(client: QueryClient, type: string, data: Record<string, unknown>) {
  if (current !== "on") return;
  const myId = client.getQueryData<Me>(["me"])?.user.id;
  if (!myId) return;
  if (type === "conversation.updated") {
    const c = data as unknown as Conversation;
    const before = assignees.has(c.id)
      ? assignees.get(c.id)
      : client.getQueryData<Conversation>(["conversation", c.id])?.assigned_to;
    assignees.set(c.id, c.assigned_to);
    if (c.assigned_to === myId && before !== myId && c.contact)
      show("Assigned to you", contactLabel(c.contact), c.id);
    return;
  }
  if (type === "message.received") {
    const m = data as unknown as Message & { conversation_id: string };
    if (!m.conversation_id) return;
    const { conversation } = await api<{ conversation: Conversation }>(
      `/api/conversations/${m.conversation_id}`,
    );
    assignees.set(conversation.id, conversation.assigned_to);
    if (conversation.assigned_to !== myId) return;
    show(contactLabel(conversation.contact), m.text ?? "New message", conversation.id);
  }
}
