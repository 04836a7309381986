/**
 * The API's resources as the console reads them (README "API overview" and product.md).
 * Flow node configs are the service's own types.
 */
import type { NodeConfigs, NodeType } from "../../../src/flows/node-types/index.js";

export type { NodeConfigs, NodeType };

export interface User {
  id: string;
  name: string;
  email: string;
}

export interface Me {
  user: User;
  profile: { user_id: string; account_id: string | null; role: "owner" | "member" | null };
  account: { id: string; name: string; created_at: string } | null;
}

export interface Member {
  user_id: string;
  name: string;
  email: string;
  role: "owner" | "member";
  availability?: "online" | "away";
  joined_at: string;
}

export interface Contact {
  id: string;
  wa_id: string | null;
  name: string | null;
  phone: string | null;
  tags: string[];
  attributes?: Record<string, string>;
  opted_out?: boolean;
  conversation_id?: string | null;
}

export interface Reaction {
  actor_type: "agent" | "customer";
  actor_id: string;
  emoji: string;
}

export interface MediaInfo {
  id?: string;
  mime_type?: string;
  sha256?: string;
  caption?: string;
  filename?: string;
  size?: number;
  status?: "pending" | "stored" | "failed";
  url?: string;
}

export interface Message {
  id: string;
  conversation_id: string;
  message_id: string | null;
  direction: "inbound" | "outbound" | "internal";
  sender_type: "customer" | "agent" | "bot" | string;
  sender_user_id: string | null;
  type: string;
  text: string | null;
  interactive: { type?: string; id?: string; title?: string } | null;
  /** What was sent to Meta for an outbound message (an interactive message's buttons or list). */
  payload?: unknown;
  media: MediaInfo | null;
  status: string;
  error: unknown;
  created_at: string;
  reactions?: Reaction[];
}

export type ConversationStatus = "open" | "pending" | "closed";

export interface Conversation {
  id: string;
  status: ConversationStatus;
  assigned_to: string | null;
  last_message_at: string | null;
  created_at: string;
  contact: Contact;
  last_message: Message | null;
  unread_count?: number;
  window_expires_at?: string | null;
  handoff_note?: string | null;
  automation?: Automation;
}

/** Whether flows may start in a conversation (product.md section 20). */
export interface Automation {
  state: "active" | "paused";
  until: string | null;
  reason: "agent_reply" | "assigned" | "agent_started" | "manual" | null;
}

export interface FlowNode {
  id?: string;
  node_key: string;
  node_type: NodeType;
  config: Record<string, unknown>;
  position_x: number;
  position_y: number;
}

export type FlowStatus = "draft" | "active" | "archived";
export type TriggerType = "keyword" | "first_inbound_message" | "manual";

export interface Flow {
  id: string;
  name: string;
  description: string | null;
  status: FlowStatus;
  trigger_type: TriggerType;
  trigger_config: Record<string, unknown>;
  entry_node_id: string | null;
  fallback_policy: Record<string, unknown>;
  execution_count?: number;
  created_at: string;
  updated_at: string;
}

export interface FlowTemplate {
  slug: string;
  name: string;
  description: string;
  trigger_type?: TriggerType;
}

export interface Issue {
  severity: "error" | "warning";
  code: string;
  message: string;
  node_key?: string;
}

export interface Run {
  id: string;
  flow_id: string;
  contact_id: string;
  conversation_id: string | null;
  status: "active" | "completed" | "handed_off" | "timed_out" | "failed";
  current_node_key: string | null;
  vars: Record<string, unknown>;
  end_reason: string | null;
  started_at: string;
  last_activity_at: string;
  ended_at: string | null;
}

export interface RunEvent {
  id: string;
  run_id: string;
  event_type: string;
  node_key: string | null;
  payload: Record<string, unknown> | null;
  created_at: string;
}

export interface ChannelHealth {
  connected: boolean;
  reason?: string;
  message?: string;
  needs_reset?: boolean;
  phone_info?: { id: string; display_phone_number?: string; verified_name?: string; quality_rating?: string };
  config?: {
    status: string;
    phone_number_id: string;
    business_account_id: string | null;
    has_verify_token: boolean;
    connected_at: string | null;
    registered_at: string | null;
    subscribed_apps_at: string | null;
    last_registration_error: string | null;
  };
}

export interface WaTemplate {
  id: string;
  upstream_id?: string;
  name: string;
  language: string;
  status: string;
  category: string;
  components: { type: string; text?: string; format?: string }[];
  updated_at: string;
}

export interface CannedResponse {
  id: string;
  shortcut: string;
  text: string;
}

export interface ApiKey {
  id: string;
  name: string;
  prefix: string;
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
}

export interface WebhookEndpoint {
  id: string;
  url: string;
  events: string[];
  description: string | null;
  enabled: boolean;
  /** Why the service turned the endpoint off (after days of failures), when it did. */
  disabled_reason: string | null;
  failing_since: string | null;
  created_at: string;
  updated_at: string;
}

export interface WebhookDelivery {
  id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  attempt: number;
  status: "delivered" | "failed";
  response_status: number | null;
  duration_ms: number | null;
  error: string | null;
  next_attempt_at: string | null;
  created_at: string;
}
