import { useQuery } from "@tanstack/react-query";
import { api } from "../../lib/api";
import { pollInterval } from "../../lib/live";

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
    queryKey: ["campaigns"],
    queryFn: async () => (await api<{ campaigns: Campaign[] }>("/api/campaigns?limit=100")).campaigns,
    refetchInterval: pollInterval,
  });
}

export function useCampaign(id: string) {
  return useQuery({
    queryKey: ["campaigns", id],
    queryFn: async () => (await api<{ campaign: Campaign }>(`/api/campaigns/${id}`)).campaign,
    refetchInterval: pollInterval,
  });
}
