-- Search scoped to the account inside the index: a GIN index over (account_id, trigrams), with
-- btree_gin for the uuid column (trusted since PostgreSQL 13, like pg_trgm). The unscoped trigram
-- indexes matched every account's rows and rechecked them all against the heap: with 100 accounts,
-- a search read a hundred times the rows it could answer with.
CREATE EXTENSION IF NOT EXISTS pg_trgm;--> statement-breakpoint
CREATE EXTENSION IF NOT EXISTS btree_gin;--> statement-breakpoint
CREATE INDEX "contacts_search_idx" ON "contacts" USING gin ("account_id","name" gin_trgm_ops,"phone" gin_trgm_ops,"username" gin_trgm_ops);--> statement-breakpoint
CREATE INDEX "messages_search_idx" ON "messages" USING gin ("account_id","text" gin_trgm_ops);--> statement-breakpoint
DROP INDEX IF EXISTS "contacts_name_trgm_idx";--> statement-breakpoint
DROP INDEX IF EXISTS "contacts_phone_trgm_idx";--> statement-breakpoint
DROP INDEX IF EXISTS "messages_text_trgm_idx";
