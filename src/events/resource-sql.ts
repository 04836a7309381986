import { toAutomationJson } from "../bots/automation.js";
import { toContactJson } from "../contacts/json.js";
import { jsonFieldsSql as fieldsOf, sampleRow } from "../db/json-sql.js";
import { contacts, conversations, flowRuns, messageReactions, messages } from "../db/schema/index.js";
import type { RunRow } from "../flows/runner/store.js";
import { toConversationJson, toMessageJson, toReactionJson } from "../inbox/json.js";

/**
 * The SQL functions that build event data (`api_message_json`,
 * `api_message_reactions_json`, `api_conversation_json`,
 * `api_flow_run_json`; the triggers of
 * src/db/migrations/0007_events.sql call them) are generated here from the
 * API's own serializers, so that an event carries the resource exactly as the
 * API shows it (src/db/json-sql.ts reads a serializer back as SQL; a field
 * computed from several columns has its SQL given beside it below).
 *
 * The generated SQL is checked in as a migration (the latest definition of
 * each function); test/events/resource-sql.test.ts fails, showing the SQL
 * to put in a new migration, when a serializer changed without one.
 */

const list = (fields: string[], indent: string) => fields.join(`,\n${indent}`);

/** The run as GET /api/flows/{id}/runs/{run_id} shows it (flows/runner/routes.ts toRunJson). */
export type RunJsonOf = (r: RunRow) => Record<string, unknown>;

/** The CREATE OR REPLACE FUNCTION statements of the event data functions, as a migration holds them. */
export function eventJsonFunctions(toRunJson: RunJsonOf): Record<string, string> {
  const message = fieldsOf(messages, "m", (m) => toMessageJson(m as never));
  const reaction = fieldsOf(messageReactions, "r", (r) => toReactionJson(r as never));
  const contact = fieldsOf(contacts, "k", (k) => toContactJson(k as never));
  const automation = fieldsOf(
    conversations,
    "c",
    () => toAutomationJson({ state: "paused", until: null, reason: null }),
    {
      computed: {
        state: "CASE WHEN paused THEN 'paused' ELSE 'active' END",
        until: "CASE WHEN paused THEN api_timestamp(c.automation_until) END",
        reason: "CASE WHEN paused THEN c.automation_reason END",
      },
    },
  );
  const { row: contactRow } = sampleRow(contacts, 1000);
  const conversation = fieldsOf(
    conversations,
    "c",
    (c) => toConversationJson(c as never, contactRow as never, null),
    {
      computed: {
        automation: `json_build_object(\n      ${list(automation, "      ")})`,
        window_expires_at: "api_timestamp(c.customer_message_at + interval '24 hours')",
        contact: "contact",
        last_message: "last",
      },
    },
  );
  const run = fieldsOf(flowRuns, "r", (r) => toRunJson(r as never));
  return {
    api_message_json: `CREATE OR REPLACE FUNCTION api_message_json(m messages) RETURNS json LANGUAGE sql STABLE AS $$
  SELECT json_build_object(
    ${list(message, "    ")})
$$;`,
    api_message_reactions_json: `CREATE OR REPLACE FUNCTION api_message_reactions_json(message uuid) RETURNS json LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN (SELECT coalesce(json_agg(json_build_object(
            ${list(reaction, "            ")}) ORDER BY r.created_at, r.id), '[]'::json)
          FROM message_reactions r WHERE r.message_id = message);
END $$;`,
    api_conversation_json: `CREATE OR REPLACE FUNCTION api_conversation_json(c conversations) RETURNS json LANGUAGE plpgsql STABLE AS $$
DECLARE
  contact json;
  last json;
  paused boolean := c.automation_state = 'paused' AND (c.automation_until IS NULL OR c.automation_until > now());
BEGIN
  SELECT json_build_object(
    ${list(contact, "    ")})
    INTO contact FROM contacts k WHERE k.id = c.contact_id;
  SELECT api_message_json(m) INTO last FROM messages m WHERE m.conversation_id = c.id
    ORDER BY m.created_at DESC, m.id DESC LIMIT 1;
  RETURN json_build_object(
    ${list(conversation, "    ")});
END $$;`,
    api_flow_run_json: `CREATE OR REPLACE FUNCTION api_flow_run_json(r flow_runs) RETURNS json LANGUAGE sql STABLE AS $$
  SELECT json_build_object(
    ${list(run, "    ")})
$$;`,
  };
}
