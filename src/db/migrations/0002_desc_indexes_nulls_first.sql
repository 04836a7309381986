DROP INDEX "flow_runs_flow_started_idx";--> statement-breakpoint
DROP INDEX "flows_account_created_idx";--> statement-breakpoint
DROP INDEX "conversations_account_activity_idx";--> statement-breakpoint
CREATE INDEX "flow_runs_flow_started_idx" ON "flow_runs" USING btree ("flow_id","started_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "flows_account_created_idx" ON "flows" USING btree ("account_id","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "conversations_account_activity_idx" ON "conversations" USING btree ("account_id","last_message_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);