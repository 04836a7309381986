-- A GIN index takes new rows into a pending list that every search reads whole, until the list
-- is merged (at gin_pending_list_limit, 4 MB by default, or by autovacuum). A contact search read
-- 333 pending pages (4 MB) for 14 pages of index proper. At 64 kB the list is merged every few
-- hundred new rows, in one small batch, and a search reads at most 8 pending pages.
ALTER INDEX "contacts_search_idx" SET (gin_pending_list_limit = 64);--> statement-breakpoint
ALTER INDEX "messages_search_idx" SET (gin_pending_list_limit = 64);--> statement-breakpoint
SELECT gin_clean_pending_list('contacts_search_idx'::regclass);--> statement-breakpoint
SELECT gin_clean_pending_list('messages_search_idx'::regclass);
