-- Bots and people together (product.md section 20): a conversation's automation state, the away
-- message's last sending, members' availability and last auto-assignment, business hours.
ALTER TABLE "conversations" ADD COLUMN "automation_state" text DEFAULT 'active' NOT NULL;
--> statement-breakpoint
ALTER TABLE "conversations" ADD COLUMN "automation_until" timestamp (3) with time zone;
--> statement-breakpoint
ALTER TABLE "conversations" ADD COLUMN "automation_reason" text;
--> statement-breakpoint
ALTER TABLE "conversations" ADD COLUMN "away_sent_at" timestamp (3) with time zone;
--> statement-breakpoint
ALTER TABLE "profiles" ADD COLUMN "availability" text DEFAULT 'online' NOT NULL;
--> statement-breakpoint
ALTER TABLE "profiles" ADD COLUMN "last_assigned_at" timestamp (3) with time zone;
--> statement-breakpoint
-- Conversations waiting for a member, oldest first (auto-assignment's queue).
CREATE INDEX "conversations_waiting_idx" ON "conversations" USING btree ("account_id","created_at")
  WHERE "assigned_to" IS NULL AND "status" <> 'closed';
--> statement-breakpoint
CREATE TABLE "business_hours" (
	"account_id" uuid PRIMARY KEY NOT NULL,
	"timezone" text NOT NULL,
	"weekly" jsonb NOT NULL,
	"holidays" text[] DEFAULT '{}' NOT NULL,
	"away_message" text,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "business_hours" ADD CONSTRAINT "business_hours_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
-- Conversations in account events show their automation (src/inbox/json.ts toConversationJson).
CREATE OR REPLACE FUNCTION api_conversation_json(c conversations) RETURNS json LANGUAGE plpgsql STABLE AS $$
DECLARE
  contact json;
  last json;
  paused boolean := c.automation_state = 'paused' AND (c.automation_until IS NULL OR c.automation_until > now());
BEGIN
  SELECT json_build_object('id', k.id, 'wa_id', k.wa_id, 'name', k.name, 'phone', k.phone, 'tags', k.tags,
                           'attributes', k.attributes, 'opted_out', k.opted_out,
                           'created_at', api_timestamp(k.created_at), 'updated_at', api_timestamp(k.updated_at))
    INTO contact FROM contacts k WHERE k.id = c.contact_id;
  SELECT api_message_json(m) INTO last FROM messages m WHERE m.conversation_id = c.id
    ORDER BY m.created_at DESC, m.id DESC LIMIT 1;
  RETURN json_build_object(
    'id', c.id, 'status', c.status, 'assigned_to', c.assigned_to, 'handoff_note', c.handoff_note,
    'automation', json_build_object(
      'state', CASE WHEN paused THEN 'paused' ELSE 'active' END,
      'until', CASE WHEN paused THEN api_timestamp(c.automation_until) END,
      'reason', CASE WHEN paused THEN c.automation_reason END),
    'last_message_at', api_timestamp(c.last_message_at),
    'window_expires_at', api_timestamp(c.customer_message_at + interval '24 hours'),
    'unread_count', c.unread_count,
    'created_at', api_timestamp(c.created_at),
    'contact', contact, 'last_message', last);
END $$;
--> statement-breakpoint
DROP TRIGGER "conversations_account_event_update" ON "conversations";
--> statement-breakpoint
CREATE TRIGGER conversations_account_event_update AFTER UPDATE ON conversations
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.assigned_to IS DISTINCT FROM NEW.assigned_to
                     OR OLD.last_message_at IS DISTINCT FROM NEW.last_message_at
                     OR OLD.contact_id IS DISTINCT FROM NEW.contact_id
                     OR (OLD.automation_state, OLD.automation_until, OLD.automation_reason)
                        IS DISTINCT FROM (NEW.automation_state, NEW.automation_until, NEW.automation_reason))
  EXECUTE FUNCTION conversations_account_event();
