/**
 * The baseline: the smallest database-backed HTTP service — a bare Fastify
 * route answering one primary-key SELECT on the same PostgreSQL and the same
 * data as the service. Its figures are the practical ceiling on this machine.
 */
import Fastify from "fastify";
import pg from "pg";

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const app = Fastify({ logger: false });

app.get<{ Params: { id: string } }>("/flows/:id", async (request, reply) => {
  const { rows } = await pool.query("select * from flows where id = $1", [request.params.id]);
  if (rows.length === 0) return reply.code(404).send({ error: "Not found" });
  return { flow: rows[0] };
});

await app.listen({ port: Number(process.env.PORT), host: "127.0.0.1" });
process.on("SIGTERM", () => {
  void app.close().then(() => pool.end().then(() => process.exit(0)));
});
