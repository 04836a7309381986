import { useInfiniteQuery, useQuery } from "@tanstack/react-query";
import { useMemo } from "react";
import { api, listOf } from "../../lib/api";
import { pollInterval } from "../../lib/live";
import type {
  CannedResponse,
  Conversation,
  ConversationStatus,
  Member,
  Message,
  WaTemplate,
} from "../../lib/types";

/** React-query keys of the inbox (lib/live invalidates them on the account's events). */
export const inboxKeys = {
  conversations: ["conversations"] as const,
  conversation: (id: string | undefined) => ["conversation", id] as const,
  counts: ["counts"] as const,
  messages: (conversationId: string | undefined) => ["messages", conversationId] as const,
  members: ["members"] as const,
  canned: ["canned"] as const,
  templates: ["templates"] as const,
};

/** A conversation's status, assignee or automation changed; answers the conversation. */
export const updateConversation = (
  id: string,
  body: {
    status?: ConversationStatus;
    assigned_to?: string | null;
    automation?: { state: "paused" } | { state: "active" };
  },
) => api<{ conversation: Conversation }>(`/api/conversations/${id}`, { method: "PATCH", body });

export const markConversationRead = (id: string) =>
  api(`/api/conversations/${id}/read`, { method: "POST", body: {} });

export const sendText = (conversationId: string, text: string) =>
  api(`/api/conversations/${conversationId}/messages`, { body: { text } });

export const sendTemplate = (
  conversationId: string,
  template: { name: string; language: string; components?: unknown[] },
) => api(`/api/conversations/${conversationId}/messages`, { body: { template } });

export const addNote = (conversationId: string, text: string) =>
  api(`/api/conversations/${conversationId}/notes`, { body: { text } });

/** A file (and its caption) sent as a media message. */
export const sendMedia = (conversationId: string, form: FormData) =>
  api(`/api/conversations/${conversationId}/media`, { form });

export const sendReaction = (messageId: string, emoji: string) =>
  api("/api/messaging/react", { body: { message_id: messageId, emoji } });

export const syncTemplates = () =>
  api<{ synced: number }>("/api/messaging/templates/sync", { method: "POST", body: {} });

export interface ConversationFilters {
  status: "open" | "pending" | "closed" | "all";
  assigned: "all" | "me" | "none";
  q: string;
}

export interface Counts {
  open: number;
  pending: number;
  closed: number;
  mine: number;
  unassigned: number;
  /** Conversations (not closed) with customer messages nobody has read; older servers omit it. */
  unread?: number;
}

/** Conversations a page at a time (50), the next page fetched as the list scrolls near its end. */
export function useConversations(filters: ConversationFilters) {
  return useInfiniteQuery({
    queryKey: ["conversations", filters],
    initialPageParam: null as string | null,
    queryFn: ({ pageParam }) => {
      const params = new URLSearchParams({ limit: String(CONVERSATION_PAGE) });
      if (filters.status !== "all") params.set("status", filters.status);
      if (filters.assigned !== "all") params.set("assigned_to", filters.assigned);
      if (filters.q.trim()) params.set("q", filters.q.trim());
      if (pageParam) params.set("cursor", pageParam);
      return api<{ conversations: Conversation[]; next_cursor: string | null }>(
        `/api/conversations?${params}`,
      );
    },
    getNextPageParam: (last) => last.next_cursor,
    refetchInterval: pollInterval,
    placeholderData: (previous) => previous,
  });
}

export const CONVERSATION_PAGE = 50;

/**
 * One conversation, from its own route: the thread header and the contact panel read it (never
 * the list, which may be filtered, paged or stale). Events for it invalidate ["conversation", id].
 */
export function useConversation(id: string | undefined) {
  return useQuery({
    queryKey: inboxKeys.conversation(id),
    enabled: Boolean(id),
    queryFn: () =>
      api<{ conversation: Conversation }>(`/api/conversations/${id}`).then((r) => r.conversation),
    refetchInterval: pollInterval,
  });
}

/** Counts per status; null while the server has no counts route. */
export function useCounts() {
  return useQuery({
    queryKey: inboxKeys.counts,
    queryFn: async () => {
      return await api<Counts>("/api/conversations/counts");
    },
    refetchInterval: pollInterval,
  });
}

/** How many messages a page of the thread holds. */
export const MESSAGE_PAGE = 100;

/**
 * A conversation's messages, oldest first, read from the latest back a page at a time: the
 * thread opens on the latest page, and `fetchNextPage` brings the page before the oldest shown.
 */
export function useMessages(conversationId: string | undefined) {
  const query = useInfiniteQuery({
    queryKey: inboxKeys.messages(conversationId),
    enabled: Boolean(conversationId),
    initialPageParam: null as string | null,
    queryFn: ({ pageParam }) => {
      const params = new URLSearchParams({ limit: String(MESSAGE_PAGE), order: "newest" });
      if (pageParam) params.set("cursor", pageParam);
      return api<{ messages: Message[]; next_cursor: string | null }>(
        `/api/conversations/${conversationId}/messages?${params}`,
      );
    },
    getNextPageParam: (last) => last.next_cursor,
    refetchInterval: pollInterval,
  });
  const pages = query.data?.pages;
  const messages = useMemo(
    () => (pages ? pages.toReversed().flatMap((p) => p.messages) : undefined),
    [pages],
  );
  return {
    data: messages,
    isPending: query.isPending,
    hasOlder: query.hasNextPage,
    loadingOlder: query.isFetchingNextPage,
    loadOlder: query.fetchNextPage,
  };
}

export function useMembers() {
  return useQuery({
    queryKey: inboxKeys.members,
    queryFn: () => api<{ members: Member[] }>("/api/accounts/members").then((r) => r.members),
    staleTime: 60_000,
  });
}

/** Canned responses; null while the server has no such route. */
export function useCannedResponses() {
  return useQuery({
    queryKey: inboxKeys.canned,
    queryFn: async () => {
      return listOf<CannedResponse>(await api("/api/canned-responses"), "canned_responses");
    },
    staleTime: 30_000,
  });
}

export function useTemplates(status?: string) {
  return useQuery({
    queryKey: [...inboxKeys.templates, status ?? "all"],
    queryFn: async () => {
      const r = await api<{ templates: WaTemplate[] }>(
        `/api/messaging/templates${status ? `?status=${encodeURIComponent(status)}` : ""}`,
      );
      return r.templates;
    },
  });
}
