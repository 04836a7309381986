CREATE TABLE "contact_attribute_definitions" (
	"account_id" uuid NOT NULL,
	"key" text NOT NULL,
	"label" text NOT NULL,
	"type" text NOT NULL,
	"options" text[],
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "contact_attribute_definitions_account_id_key_pk" PRIMARY KEY("account_id","key")
);
--> statement-breakpoint
CREATE TABLE "contact_import_errors" (
	"import_id" uuid NOT NULL,
	"row" bigint NOT NULL,
	"value" text,
	"reason" text NOT NULL,
	CONSTRAINT "contact_import_errors_import_id_row_pk" PRIMARY KEY("import_id","row")
);
--> statement-breakpoint
CREATE TABLE "contact_import_files" (
	"import_id" uuid PRIMARY KEY NOT NULL,
	"data" "bytea" NOT NULL
);
--> statement-breakpoint
CREATE TABLE "contact_imports" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"account_id" uuid NOT NULL,
	"status" text DEFAULT 'queued' NOT NULL,
	"filename" text,
	"mapping" jsonb NOT NULL,
	"default_country" text,
	"on_duplicate" text NOT NULL,
	"add_tags" text[] DEFAULT '{}' NOT NULL,
	"opt_in_source" text,
	"total_rows" integer,
	"processed_rows" integer DEFAULT 0 NOT NULL,
	"created" integer DEFAULT 0 NOT NULL,
	"updated" integer DEFAULT 0 NOT NULL,
	"skipped" integer DEFAULT 0 NOT NULL,
	"errors" integer DEFAULT 0 NOT NULL,
	"failure" text,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "contacts" ADD COLUMN "opted_out_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "contacts" ADD COLUMN "opted_in_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "contacts" ADD COLUMN "opt_in_source" text;--> statement-breakpoint
ALTER TABLE "contacts" ADD COLUMN "bsuid" text;--> statement-breakpoint
ALTER TABLE "contacts" ADD COLUMN "username" text;--> statement-breakpoint
ALTER TABLE "contact_attribute_definitions" ADD CONSTRAINT "contact_attribute_definitions_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "contact_import_errors" ADD CONSTRAINT "contact_import_errors_import_id_contact_imports_id_fk" FOREIGN KEY ("import_id") REFERENCES "public"."contact_imports"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "contact_import_files" ADD CONSTRAINT "contact_import_files_import_id_contact_imports_id_fk" FOREIGN KEY ("import_id") REFERENCES "public"."contact_imports"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "contact_imports" ADD CONSTRAINT "contact_imports_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "contacts_account_bsuid_uq" ON "contacts" USING btree ("account_id","bsuid") WHERE "contacts"."bsuid" is not null;--> statement-breakpoint
CREATE INDEX "contacts_account_phone_idx" ON "contacts" USING btree ("account_id","phone");
