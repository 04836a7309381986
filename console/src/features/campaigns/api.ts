import { useQuery } from "@tanstack/react-query";
import { api } from "../../lib/api";
import { pollInterval } from "../../lib/live";

/** React-query keys of the campaigns feature (lib/live invalidates `all` on campaign events). */
export const campaignKeys = {
  all: ["campaigns"] as const,
  campaign: (id: string | null | undefined) => ["campaigns", id] as const,
  recipients: (id: string, status: string) => ["campaigns", id, "recipients", status] as const,
  preview: (draft: string) => ["campaigns", "draft-preview", draft] as const,
};

export type CampaignStatus = "draft" | "scheduled" | "running" | "paused" | "completed" | "cancelled";

export interface CampaignCounts {
  total: number;
  queued: number;
  sending: number;
  sent: number;
  delivered: number;
  read: number;
  replied: number;
  failed: number;
  skipped: number;
  deferred: number;
  unknown: number;
}

export interface Campaign {
  id: string;
  name: string;
  status: CampaignStatus;
  template: { name: string; language: string };
  parameters: {
    header?: string[];
    body?: string[] | Record<string, string>;
    buttons?: Array<{ index: number; parameters: string[] }>;
  };
  audience: { tags_any?: string[]; tags_none?: string[]; attributes?: Record<string, string> };
  scheduled_at: string | null;
  started_at: string | null;
  completed_at: string | null;
  paused_reason: string | null;
  counts: CampaignCounts;
}

export interface Preview {
  recipients: number;
  excluded: { opted_out: number; no_address: number; duplicate: number };
  samples: Array<{
    contact_id: string;
    name: string | null;
    phone: string | null;
    text: string;
    missing: string | null;
  }>;
  /** Draft previews only: why there are no samples yet (the template or its parameters). */
  template_problem?: string | null;
}

export interface Recipient {
  contact_id: string;
  name: string | null;
  phone: string | null;
  status: string;
  error_code: string | null;
  error_title: string | null;
  skipped_reason: string | null;
  updated_at: string;
}

/** Recipients past their send: everything but queued, sending and deferred. */
export const doneCount = (c: CampaignCounts) => c.total - c.queued - (c.sending ?? 0) - c.deferred;

export function useCampaigns() {
  return useQuery({
    queryKey: campaignKeys.all,
    queryFn: async () => (await api<{ campaigns: Campaign[] }>("/api/campaigns?limit=100")).campaigns,
    refetchInterval: pollInterval,
  });
}

export function useCampaign(id: string) {
  return useQuery({
    queryKey: campaignKeys.campaign(id),
    queryFn: () => fetchCampaign(id),
    refetchInterval: pollInterval,
  });
}

export const fetchCampaign = async (id: string) =>
  (await api<{ campaign: Campaign }>(`/api/campaigns/${id}`)).campaign;

/** Saves a draft: a new one without an id, else its changes. */
export const saveCampaign = (id: string | null | undefined, body: Record<string, unknown>) =>
  id
    ? api<{ campaign: Campaign }>(`/api/campaigns/${id}`, { method: "PATCH", body })
    : api<{ campaign: Campaign }>("/api/campaigns", { method: "POST", body });

/** Who a draft would reach and what they would read. */
export const previewCampaign = (body: unknown) =>
  api<Preview>("/api/campaigns/preview", { method: "POST", body });

export const sendCampaignTest = (id: string, phone: string) =>
  api(`/api/campaigns/${id}/test`, { method: "POST", body: { phone } });

export const campaignAction = (id: string, verb: "start" | "pause" | "resume" | "cancel" | "retry-failed") =>
  api(`/api/campaigns/${id}/${verb}`, { method: "POST" });

/** A page of 100 recipients, optionally of one status, from the cursor on. */
export function fetchRecipients(id: string, status: string, cursor: string) {
  const params = new URLSearchParams({ limit: "100" });
  if (status) params.set("status", status);
  if (cursor) params.set("cursor", cursor);
  return api<{ recipients: Recipient[]; next_cursor: string | null }>(
    `/api/campaigns/${id}/recipients?${params}`,
  );
}

/** The recipients (optionally of one status) as CSV (a download link). */
export const recipientsCsvUrl = (id: string, status: string) =>
  `/api/campaigns/${id}/recipients.csv${status ? `?status=${encodeURIComponent(status)}` : ""}`;
