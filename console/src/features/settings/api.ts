/** The settings feature's calls: team, availability, automation, business hours, canned responses, webhooks, API keys. */
import { api, listOf } from "../../lib/api";
import type { ApiKey, WebhookDelivery, WebhookEndpoint } from "../../lib/types";

export const settingsKeys = {
  invitations: ["invitations"] as const,
  settings: ["settings"] as const,
  businessHours: ["business-hours"] as const,
  webhookEndpoints: ["webhook-endpoints"] as const,
  webhookDeliveries: (endpointId: string) => ["webhook-deliveries", endpointId] as const,
  apiKeys: ["api-keys"] as const,
};

export interface Invitation {
  id: string;
  email: string;
  expires_at: string;
}

export const fetchInvitations = () =>
  api<{ invitations: Invitation[] }>("/api/accounts/invitations").then((r) => r.invitations);

export const createInvitation = (email: string) =>
  api<{ invitation: Invitation & { token: string } }>("/api/accounts/invitations", { body: { email } });

export const setAvailability = (availability: "online" | "away") =>
  api("/api/me", { method: "PATCH", body: { availability } });

/** The account's automation settings (typed by the page that shows them). */
export const fetchSettings = <T>() => api<{ settings: T }>("/api/settings").then((r) => r.settings);

export const updateSettings = (body: Record<string, unknown>) =>
  api("/api/settings", { method: "PATCH", body });

export const fetchBusinessHours = <T>() =>
  api<{ business_hours: T | null }>("/api/settings/business-hours").then((r) => r.business_hours);

export const saveBusinessHours = (body: Record<string, unknown>) =>
  api("/api/settings/business-hours", { method: "PUT", body });

export const saveCannedResponse = (id: string | undefined, body: { shortcut: string; text: string }) =>
  id ? api(`/api/canned-responses/${id}`, { method: "PUT", body }) : api("/api/canned-responses", { body });

export const deleteCannedResponse = (id: string) => api(`/api/canned-responses/${id}`, { method: "DELETE" });

export const fetchWebhookEndpoints = async () =>
  listOf<WebhookEndpoint>(await api("/api/webhook-endpoints"), "endpoints");

export const fetchWebhookDeliveries = async (endpointId: string) =>
  listOf<WebhookDelivery>(await api(`/api/webhook-endpoints/${endpointId}/deliveries`), "deliveries");

export const createWebhookEndpoint = (body: { url: string; events: string[] }) =>
  api<{ endpoint: WebhookEndpoint; secret: string }>("/api/webhook-endpoints", { body });

export const setWebhookEndpointEnabled = (id: string, enabled: boolean) =>
  api(`/api/webhook-endpoints/${id}`, { method: "PATCH", body: { enabled } });

export const deleteWebhookEndpoint = (id: string) =>
  api(`/api/webhook-endpoints/${id}`, { method: "DELETE" });

export const testWebhookEndpoint = (id: string) =>
  api(`/api/webhook-endpoints/${id}/test`, { method: "POST", body: {} });

export const fetchApiKeys = async () => listOf<ApiKey>(await api("/api/api-keys"), "api_keys");

export const createApiKey = (body: { name: string; expires_in_days?: number }) =>
  api<{ api_key: ApiKey; key: string }>("/api/api-keys", { body });

export const revokeApiKey = (id: string) => api(`/api/api-keys/${id}`, { method: "DELETE" });
