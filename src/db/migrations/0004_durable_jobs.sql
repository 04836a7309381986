CREATE TABLE "worker_instances" (
	"worker_id" text PRIMARY KEY NOT NULL,
	"instance_id" text NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "flow_runs" ADD COLUMN "awaiting_message_id" uuid;--> statement-breakpoint
ALTER TABLE "flow_runs" ADD COLUMN "question_sent_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "flow_runs" ADD COLUMN "resume_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "send_started_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "flow_runs" ADD CONSTRAINT "flow_runs_awaiting_message_id_messages_id_fk" FOREIGN KEY ("awaiting_message_id") REFERENCES "public"."messages"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
-- True when no session holds the liveness lock of the instance (see src/jobs/worker.ts).
CREATE FUNCTION "instance_is_dead"(instance text) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  IF pg_try_advisory_lock(hashtextextended('wa-inbox-instance:' || instance, 0)) THEN
    PERFORM pg_advisory_unlock(hashtextextended('wa-inbox-instance:' || instance, 0));
    RETURN true;
  END IF;
  RETURN false;
END $$;
