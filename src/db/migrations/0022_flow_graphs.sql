-- A flow's nodes become one document a flow (flow_graphs.nodes): they are only ever written and
-- read whole, and 500 rows with two index entries and a foreign-key check each made a PUT of 500
-- nodes cost PostgreSQL six to nine times a PUT of 20. Each node keeps its id, key, type, config,
-- position and created_at, in the order the nodes were written, as the API answers them.
CREATE TABLE "flow_graphs" (
	"flow_id" uuid PRIMARY KEY NOT NULL,
	"nodes" json NOT NULL
);--> statement-breakpoint
ALTER TABLE "flow_graphs" ADD CONSTRAINT "flow_graphs_flow_id_flows_id_fk" FOREIGN KEY ("flow_id") REFERENCES "public"."flows"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
INSERT INTO "flow_graphs" ("flow_id", "nodes")
SELECT n."flow_id", json_agg(row_to_json(j) ORDER BY n."created_at", n."ordinal", n."id")
FROM "flow_nodes" n
CROSS JOIN LATERAL (
	SELECT n."id", n."flow_id", n."node_key", n."node_type", n."config", n."position_x", n."position_y",
		to_char(n."created_at" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "created_at"
) j
GROUP BY n."flow_id";--> statement-breakpoint
DROP TABLE "flow_nodes";
