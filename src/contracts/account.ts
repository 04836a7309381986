import { z } from "zod";
import { jsonObject, nextCursor, timestamp } from "./common.js";

const hhmm = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$|^24:00$/);

export const BusinessHours = z
  .object({
    timezone: z.string().describe("An IANA timezone such as Europe/Berlin"),
    weekly: z.record(z.string(), z.array(z.tuple([hhmm, hhmm]))).describe("Opening ranges by day, mon..sun"),
    holidays: z.array(z.string()).describe("Whole days closed, YYYY-MM-DD"),
    away_message: z.string().nullable(),
    open_now: z.boolean(),
  })
  .meta({ id: "BusinessHours" });

export const Settings = z
  .object({
    default_country: z.string().nullable(),
    opt_out_keywords: z.array(z.string()),
    opt_in_keywords: z.array(z.string()),
    opt_out_reply: z.string().nullable(),
    agent_reply_pause_minutes: z.number().int(),
    auto_assign: z.object({
      mode: z.enum(["off", "round_robin", "least_busy"]),
      max_open_per_agent: z.number().int().nullable(),
    }),
  })
  .meta({ id: "Settings" });

export const Template = z
  .object({
    id: z.uuid(),
    upstream_id: z.string().nullable(),
    name: z.string(),
    language: z.string(),
    status: z.string().describe("Meta's status: APPROVED, PENDING, REJECTED, PAUSED, DISABLED"),
    category: z.string().nullable(),
    components: z.array(jsonObject),
    updated_at: timestamp,
  })
  .meta({ id: "Template" });

export const CannedResponse = z
  .object({
    id: z.uuid(),
    shortcut: z.string(),
    text: z.string(),
    created_by: z.string().nullable(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: "CannedResponse" });

export const WebhookEndpoint = z
  .object({
    id: z.uuid(),
    url: z.url().describe("An absolute https URL"),
    description: z.string().nullable(),
    events: z.array(z.string()).describe("Event types sent (see GET /api/events), or `*` for all"),
    enabled: z.boolean(),
    disabled_reason: z.string().nullable(),
    failing_since: timestamp.nullable(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: "WebhookEndpoint" });

export const WebhookDelivery = z
  .object({
    id: z.uuid(),
    endpoint_id: z.uuid(),
    event_id: z.string(),
    event_type: z.string(),
    attempt: z.number().int(),
    status: z.enum(["delivered", "failed"]),
    response_status: z.number().int().nullable(),
    response_body: z.string().nullable(),
    duration_ms: z.number().int().nullable(),
    error: z.string().nullable(),
    next_attempt_at: timestamp.nullable(),
    created_at: timestamp,
  })
  .meta({ id: "WebhookDelivery" });

export const Event = z
  .object({
    id: z.string(),
    type: z.string().describe("message.received, message.sent, conversation.updated, ... (README: Events)"),
    created_at: z.string().describe("ISO 8601"),
    data: jsonObject,
  })
  .meta({ id: "Event" });

export const MessagingConfig = z
  .object({
    status: z.enum(["connected", "disconnected"]),
    phone_number_id: z.string().regex(/^\d+$/),
    business_account_id: z.string().nullable(),
    has_verify_token: z.boolean(),
    connected_at: z.string().nullable(),
    registered_at: z.string().nullable(),
    subscribed_apps_at: z.string().nullable(),
    last_registration_error: z.string().nullable(),
    messages_per_second: z.number().int().nullable(),
    updated_at: z.string().nullable(),
  })
  .meta({ id: "MessagingConfig" });

export const settingsAnswer = z.object({ settings: Settings });
export const businessHoursAnswer = z.object({ business_hours: BusinessHours.nullable() });
export const availabilityAnswer = z.object({
  profile: z.object({ user_id: z.string(), availability: z.enum(["online", "away"]) }),
});
export const invitationsAnswer = z.object({
  invitations: z.array(
    z.object({ id: z.uuid(), email: z.string(), expires_at: timestamp, created_at: timestamp }),
  ),
});
export const templatesAnswer = z.object({ templates: z.array(Template) });
export const syncAnswer = z.object({
  templates: z.array(Template),
  synced: z.number().int().describe("How many templates Meta listed"),
});
export const cannedListAnswer = z.object({ canned_responses: z.array(CannedResponse) });
export const cannedAnswer = z.object({ canned_response: CannedResponse });
export const endpointAnswer = z.object({ endpoint: WebhookEndpoint });
export const endpointCreated = z.object({
  endpoint: WebhookEndpoint,
  secret: z.string().describe("The signing secret (Standard Webhooks `whsec_...`), shown this once"),
});
export const endpointsAnswer = z.object({ endpoints: z.array(WebhookEndpoint) });
export const deliveriesPage = z.object({ deliveries: z.array(WebhookDelivery), next_cursor: nextCursor });
export const deliveryAnswer = z.object({ delivery: WebhookDelivery });
export const eventsPage = z.object({
  events: z.array(Event),
  next_after: z.string().nullable().describe("Pass as `after` to read on"),
  has_more: z.boolean(),
});

const phoneInfo = z.looseObject({ id: z.string() }).describe("Meta's answer about the phone number");
export const configHealth = z
  .object({
    connected: z.boolean(),
    reason: z
      .enum(["no_account", "db_error", "no_config", "token_corrupted", "meta_api_error", "internal_error"])
      .optional(),
    message: z.string().optional(),
    needs_reset: z.boolean().optional(),
    phone_info: phoneInfo.optional(),
    config: MessagingConfig.optional(),
  })
  .meta({ id: "MessagingConfigHealth" });
/** The health check's unexpected failure (spec: 500 `{ connected: false, reason: 'unknown', message }`). */
export const configHealthFailure = z
  .object({ connected: z.literal(false), reason: z.literal("unknown"), message: z.string() })
  .meta({ id: "MessagingConfigHealthFailure" });
export const configSaved = z
  .object({
    success: z.boolean(),
    saved: z.literal(true),
    registered: z.boolean(),
    registration_skipped: z.boolean().optional(),
    registration_error: z.string().optional(),
    phone_info: phoneInfo,
  })
  .meta({ id: "MessagingConfigSaved" });
