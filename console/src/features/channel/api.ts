/** The channel feature's calls: the WhatsApp number's configuration and its health. */
import { api } from "../../lib/api";
import type { ChannelHealth } from "../../lib/types";

export const channelKeys = {
  /** The configuration's health (`GET /api/messaging/config`). */
  health: ["channel"] as const,
};

export interface SaveResult {
  success: boolean;
  registered?: boolean;
  registration_skipped?: boolean;
  registration_error?: string;
}

export const fetchChannelHealth = () => api<ChannelHealth>("/api/messaging/config");

export const saveChannelConfig = (body: Record<string, string>) =>
  api<SaveResult>("/api/messaging/config", { body });

export const deleteChannelConfig = () => api("/api/messaging/config", { method: "DELETE" });

/** Where Meta posts the webhooks (the callback URL to paste in Meta's app settings). */
export const webhookCallbackUrl = (origin: string) => `${origin}/api/messaging/webhook`;
