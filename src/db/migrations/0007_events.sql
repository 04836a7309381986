CREATE TABLE "account_events" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"seq" bigint GENERATED ALWAYS AS IDENTITY (sequence name "account_events_seq_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"tx_id" "xid8" DEFAULT pg_current_xact_id() NOT NULL,
	"account_id" uuid NOT NULL,
	"type" text NOT NULL,
	"data" json NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_deliveries" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"account_id" uuid NOT NULL,
	"endpoint_id" uuid NOT NULL,
	"event_id" uuid NOT NULL,
	"event_type" text NOT NULL,
	"attempt" integer NOT NULL,
	"status" text NOT NULL,
	"response_status" integer,
	"response_body" text,
	"duration_ms" integer NOT NULL,
	"error" text,
	"next_attempt_at" timestamp (3) with time zone,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_endpoints" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"account_id" uuid NOT NULL,
	"url" text NOT NULL,
	"description" text,
	"events" text[] NOT NULL,
	"secret" text NOT NULL,
	"enabled" boolean DEFAULT true NOT NULL,
	"disabled_reason" text,
	"failing_since" timestamp (3) with time zone,
	"created_by" uuid,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_endpoint_id_webhook_endpoints_id_fk" FOREIGN KEY ("endpoint_id") REFERENCES "public"."webhook_endpoints"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD CONSTRAINT "webhook_endpoints_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD CONSTRAINT "webhook_endpoints_created_by_users_id_fk" FOREIGN KEY ("created_by") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "account_events_account_position_idx" ON "account_events" USING btree ("account_id","tx_id","seq");--> statement-breakpoint
CREATE INDEX "account_events_created_idx" ON "account_events" USING brin ("created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "webhook_deliveries_attempt_uq" ON "webhook_deliveries" USING btree ("endpoint_id","event_id","attempt");--> statement-breakpoint
CREATE INDEX "webhook_deliveries_endpoint_created_idx" ON "webhook_deliveries" USING btree ("endpoint_id","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "webhook_deliveries_created_idx" ON "webhook_deliveries" USING brin ("created_at");--> statement-breakpoint
CREATE INDEX "webhook_endpoints_account_idx" ON "webhook_endpoints" USING btree ("account_id","created_at");--> statement-breakpoint
-- Account events (product section 15). Triggers write each event in the transaction that makes
-- the change, with `data` built here as the API shows the resource (src/inbox/json.ts,
-- src/flows/runner/routes.ts toRunJson); test/events/event-data.test.ts pins that equality.
CREATE FUNCTION api_timestamp(t timestamptz) RETURNS text LANGUAGE sql STABLE AS $$
  SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;
--> statement-breakpoint
-- toMessageJson (without reactions), as a conversation's last_message shows it.
CREATE FUNCTION api_message_json(m messages) RETURNS json LANGUAGE sql STABLE AS $$
  SELECT json_build_object(
    'id', m.id, 'conversation_id', m.conversation_id, 'message_id', m.message_id,
    'direction', m.direction, 'sender_type', m.sender_type, 'sender_user_id', m.sender_user_id,
    'type', m.type, 'text', m.text, 'interactive', m.interactive, 'media', m.media,
    'payload', m.payload, 'context_message_id', m.context_message_id, 'status', m.status,
    'error', m.error, 'upstream_timestamp', api_timestamp(m.upstream_timestamp),
    'created_at', api_timestamp(m.created_at), 'updated_at', api_timestamp(m.updated_at))
$$;
--> statement-breakpoint
-- Functions that query are plpgsql: their plans are cached per connection (a SQL function's are not).
CREATE FUNCTION api_message_reactions_json(message uuid) RETURNS json LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN (SELECT coalesce(json_agg(json_build_object('actor_type', r.actor_type, 'actor_id', r.actor_id,
                                                     'emoji', r.emoji) ORDER BY r.created_at, r.id), '[]'::json)
          FROM message_reactions r WHERE r.message_id = message);
END $$;
--> statement-breakpoint
-- The message as a conversation's message list shows it: api_message_json plus its reactions,
-- appended to the object's text so that the key order stays the API's.
CREATE FUNCTION api_message_event_json(m messages, reactions json) RETURNS json LANGUAGE sql STABLE AS $$
  SELECT (left(api_message_json(m)::text, -1) || ', "reactions" : ' || reactions::text || '}')::json
$$;
--> statement-breakpoint
CREATE FUNCTION api_conversation_json(c conversations) RETURNS json LANGUAGE plpgsql STABLE AS $$
DECLARE
  contact json;
  last json;
BEGIN
  SELECT json_build_object('id', k.id, 'wa_id', k.wa_id, 'name', k.name, 'phone', k.phone, 'tags', k.tags)
    INTO contact FROM contacts k WHERE k.id = c.contact_id;
  SELECT api_message_json(m) INTO last FROM messages m WHERE m.conversation_id = c.id
    ORDER BY m.created_at DESC, m.id DESC LIMIT 1;
  RETURN json_build_object(
    'id', c.id, 'status', c.status, 'assigned_to', c.assigned_to,
    'last_message_at', api_timestamp(c.last_message_at), 'created_at', api_timestamp(c.created_at),
    'contact', contact, 'last_message', last);
END $$;
--> statement-breakpoint
CREATE FUNCTION api_flow_run_json(r flow_runs) RETURNS json LANGUAGE sql STABLE AS $$
  SELECT json_build_object(
    'id', r.id, 'flow_id', r.flow_id, 'account_id', r.account_id, 'contact_id', r.contact_id,
    'conversation_id', r.conversation_id, 'status', r.status, 'current_node_key', r.current_node_key,
    'vars', r.vars, 'reprompt_count', r.reprompt_count, 'end_reason', r.end_reason,
    'started_at', api_timestamp(r.started_at), 'last_activity_at', api_timestamp(r.last_activity_at),
    'ended_at', api_timestamp(r.ended_at))
$$;
--> statement-breakpoint
-- Writes the event, wakes the instances streaming this account (NOTIFY is sent at commit; identical
-- payloads in one transaction are sent once), and queues one delivery per subscribed endpoint.
CREATE FUNCTION record_account_event(account uuid, event_type text, data json) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  event_id uuid;
  endpoint_id uuid;
BEGIN
  INSERT INTO account_events (account_id, type, data) VALUES (account, event_type, data) RETURNING id INTO event_id;
  PERFORM pg_notify('account_events', account::text);
  FOR endpoint_id IN
    SELECT e.id FROM webhook_endpoints e
    WHERE e.account_id = account AND e.enabled AND (e.events @> ARRAY[event_type] OR e.events @> ARRAY['*'])
  LOOP
    PERFORM graphile_worker.add_job('deliver-webhook',
      json_build_object('endpointId', endpoint_id, 'eventId', event_id, 'attempt', 1),
      queue_name => 'webhooks:' || endpoint_id, max_attempts => 5);
  END LOOP;
END $$;
--> statement-breakpoint
CREATE FUNCTION messages_account_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF tg_op = 'INSERT' THEN
    PERFORM record_account_event(NEW.account_id,
      CASE WHEN NEW.direction = 'inbound' THEN 'message.received' ELSE 'message.sent' END,
      api_message_event_json(NEW, '[]'::json));
  ELSE
    PERFORM record_account_event(NEW.account_id, 'message.status',
      api_message_event_json(NEW, api_message_reactions_json(NEW.id)));
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER messages_account_event_insert AFTER INSERT ON messages
  FOR EACH ROW EXECUTE FUNCTION messages_account_event();
--> statement-breakpoint
CREATE TRIGGER messages_account_event_status AFTER UPDATE OF status ON messages
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION messages_account_event();
--> statement-breakpoint
CREATE FUNCTION message_reactions_account_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  target uuid;
  m messages;
BEGIN
  IF tg_op = 'DELETE' THEN target := OLD.message_id; ELSE target := NEW.message_id; END IF;
  SELECT * INTO m FROM messages WHERE id = target;
  -- The message is gone when its deletion cascaded here: nothing left to show.
  IF FOUND THEN
    PERFORM record_account_event(m.account_id, 'reaction.updated',
      api_message_event_json(m, api_message_reactions_json(m.id)));
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER message_reactions_account_event_change AFTER INSERT OR DELETE ON message_reactions
  FOR EACH ROW EXECUTE FUNCTION message_reactions_account_event();
--> statement-breakpoint
CREATE TRIGGER message_reactions_account_event_emoji AFTER UPDATE ON message_reactions
  FOR EACH ROW WHEN (OLD.emoji IS DISTINCT FROM NEW.emoji) EXECUTE FUNCTION message_reactions_account_event();
--> statement-breakpoint
CREATE FUNCTION conversations_account_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM record_account_event(NEW.account_id, 'conversation.updated', api_conversation_json(NEW));
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER conversations_account_event_insert AFTER INSERT ON conversations
  FOR EACH ROW EXECUTE FUNCTION conversations_account_event();
--> statement-breakpoint
-- Only what the conversation's JSON shows; a redelivered message touches the row without a change.
CREATE TRIGGER conversations_account_event_update AFTER UPDATE ON conversations
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.assigned_to IS DISTINCT FROM NEW.assigned_to
                     OR OLD.last_message_at IS DISTINCT FROM NEW.last_message_at
                     OR OLD.contact_id IS DISTINCT FROM NEW.contact_id)
  EXECUTE FUNCTION conversations_account_event();
--> statement-breakpoint
CREATE FUNCTION flow_runs_account_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM record_account_event(NEW.account_id, 'flow_run.updated', api_flow_run_json(NEW));
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER flow_runs_account_event_insert AFTER INSERT ON flow_runs
  FOR EACH ROW EXECUTE FUNCTION flow_runs_account_event();
--> statement-breakpoint
-- Only what the run's JSON shows (the runner's bookkeeping columns change more often).
CREATE TRIGGER flow_runs_account_event_update AFTER UPDATE ON flow_runs
  FOR EACH ROW WHEN ((OLD.status, OLD.current_node_key, OLD.vars, OLD.reprompt_count, OLD.end_reason,
                      OLD.last_activity_at, OLD.ended_at, OLD.conversation_id, OLD.flow_id, OLD.contact_id)
                     IS DISTINCT FROM
                     (NEW.status, NEW.current_node_key, NEW.vars, NEW.reprompt_count, NEW.end_reason,
                      NEW.last_activity_at, NEW.ended_at, NEW.conversation_id, NEW.flow_id, NEW.contact_id))
  EXECUTE FUNCTION flow_runs_account_event();
