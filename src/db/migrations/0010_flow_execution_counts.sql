CREATE TABLE "flow_execution_counts" (
	"flow_id" uuid NOT NULL,
	"shard" smallint NOT NULL,
	"count" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "flow_execution_counts_flow_id_shard_pk" PRIMARY KEY("flow_id","shard")
);
--> statement-breakpoint
ALTER TABLE "flow_execution_counts" ADD CONSTRAINT "flow_execution_counts_flow_id_flows_id_fk" FOREIGN KEY ("flow_id") REFERENCES "public"."flows"("id") ON DELETE cascade ON UPDATE no action;