CREATE TABLE "flow_message_receipts" (
	"message_id" uuid PRIMARY KEY NOT NULL,
	"account_id" uuid NOT NULL,
	"run_id" uuid,
	"outcome" text NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "flow_message_receipts" ADD CONSTRAINT "flow_message_receipts_message_id_messages_id_fk" FOREIGN KEY ("message_id") REFERENCES "public"."messages"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "flow_message_receipts" ADD CONSTRAINT "flow_message_receipts_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "flow_message_receipts" ADD CONSTRAINT "flow_message_receipts_run_id_flow_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."flow_runs"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "flow_message_receipts_run_idx" ON "flow_message_receipts" USING btree ("run_id");