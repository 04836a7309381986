CREATE TABLE "account_settings" (
	"account_id" uuid PRIMARY KEY NOT NULL,
	"default_country" text,
	"opt_out_keywords" text[] NOT NULL,
	"opt_in_keywords" text[] NOT NULL,
	"opt_out_reply" text,
	"agent_reply_pause_minutes" integer NOT NULL,
	"auto_assign_mode" text NOT NULL,
	"max_open_per_agent" integer,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "account_settings" ADD CONSTRAINT "account_settings_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;