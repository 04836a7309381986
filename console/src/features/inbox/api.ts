import { useInfiniteQuery, useQuery } from "@tanstack/react-query";
import { api, listOf } from "../../lib/api";
import { pollInterval } from "../../lib/live";
import type { CannedResponse, Conversation, Member, Message, WaTemplate } from "../../lib/types";

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
    queryKey: ["conversation", id],
    enabled: Boolean(id),
    queryFn: () =>
      api<{ conversation: Conversation }>(`/api/conversations/${id}`).then((r) => r.conversation),
    refetchInterval: pollInterval,
  });
}

/** Counts per status; null while the server has no counts route. */
export function useCounts() {
  return useQuery({
    queryKey: ["counts"],
    queryFn: async () => {
      return await api<Counts>("/api/conversations/counts");
    },
    refetchInterval: pollInterval,
  });
}

/** Every message of a conversation, oldest first. */
export function useMessages(conversationId: string | undefined) {
  return useQuery({
    queryKey: ["messages", conversationId],
    enabled: Boolean(conversationId),
    queryFn: async () => {
      const all: Message[] = [];
      let cursor: string | null = null;
      for (let page = 0; page < 20; page++) {
        const params = new URLSearchParams({ limit: "200" });
        if (cursor) params.set("cursor", cursor);
        const result: { messages: Message[]; next_cursor: string | null } = await api(
          `/api/conversations/${conversationId}/messages?${params}`,
        );
        all.push(...result.messages);
        cursor = result.next_cursor;
        if (!cursor) break;
      }
      return all;
    },
    refetchInterval: pollInterval,
  });
}

export function useMembers() {
  return useQuery({
    queryKey: ["members"],
    queryFn: () => api<{ members: Member[] }>("/api/accounts/members").then((r) => r.members),
    staleTime: 60_000,
  });
}

/** Canned responses; null while the server has no such route. */
export function useCannedResponses() {
  return useQuery({
    queryKey: ["canned"],
    queryFn: async () => {
      return listOf<CannedResponse>(await api("/api/canned-responses"), "canned_responses");
    },
    staleTime: 30_000,
  });
}

export function useTemplates(status?: string) {
  return useQuery({
    queryKey: ["templates", status ?? "all"],
    queryFn: async () => {
      const r = await api<{ templates: WaTemplate[] }>(
        `/api/messaging/templates${status ? `?status=${encodeURIComponent(status)}` : ""}`,
      );
      return r.templates;
    },
  });
}
