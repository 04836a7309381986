-- A flow's node document is stored as written, not compressed: a PUT of 500 nodes spent about a
-- quarter of its time in PostgreSQL compressing the document (pglz, 180 kB to 32 kB), and every
-- read decompressed it. The documents take about five times the space on disk (a flow of 20 nodes:
-- 7 kB), which is small next to a conversation's messages. Applies to documents written from now
-- on; those already written stay compressed until their flow's next PUT.
ALTER TABLE "flow_graphs" ALTER COLUMN "nodes" SET STORAGE EXTERNAL;
