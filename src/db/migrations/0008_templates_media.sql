CREATE TABLE "message_templates" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"account_id" uuid NOT NULL,
	"upstream_id" text NOT NULL,
	"name" text NOT NULL,
	"language" text NOT NULL,
	"status" text NOT NULL,
	"category" text,
	"components" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "conversations" ADD COLUMN "customer_message_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "conversations" ADD COLUMN "unread_count" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "message_templates" ADD CONSTRAINT "message_templates_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "message_templates_account_name_language_uq" ON "message_templates" USING btree ("account_id","name","language");--> statement-breakpoint
CREATE INDEX "message_templates_account_upstream_idx" ON "message_templates" USING btree ("account_id","upstream_id");--> statement-breakpoint
-- Conversations that existed before: the window runs from the customer's latest stored message.
UPDATE "conversations" c SET "customer_message_at" = m.at
FROM (SELECT conversation_id, max(coalesce(upstream_timestamp, created_at)) AS at FROM "messages"
      WHERE direction = 'inbound' GROUP BY conversation_id) m
WHERE m.conversation_id = c.id;
