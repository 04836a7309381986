import { readFileSync } from "node:fs";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MIGRATIONS_DIR } from "../../src/db/migrate.js";
import { createTestDatabase } from "../helpers/harness.js";

// The part of migration 0006 that binds existing invitations to an email, run against rows
// written as before it (email optional).
const statements = readFileSync(path.join(MIGRATIONS_DIR, "0006_access.sql"), "utf8")
  .split("--> statement-breakpoint")
  .map((statement) => statement.trim())
  .filter((statement) => statement.includes('"account_invitations"'));

let db: Awaited<ReturnType<typeof createTestDatabase>>;
let client: pg.Client;
beforeAll(async () => {
  db = await createTestDatabase();
  client = new pg.Client({ connectionString: db.url });
  await client.connect();
});
afterAll(async () => {
  await client.end();
  await db.drop();
});

describe("migration 0006 and the invitations written before it", () => {
  it("binds accepted ones to their acceptor, drops pending ones without email, lower-cases the rest", async () => {
    await client.query("alter table account_invitations alter column email drop not null");
    const { rows: people } = await client.query<{ id: string }>(
      "insert into users (name, email) values ('Owner', 'owner@example.com'), ('Joined', 'Joined@Example.com') returning id",
    );
    const [owner, joined] = people.map((p) => p.id);
    const { rows: accounts } = await client.query<{ id: string }>(
      "insert into accounts (name) values ('Shop') returning id",
    );
    const account = accounts[0]?.id;
    const invitation = (label: string, email: string | null, acceptedBy: string | null) =>
      client.query(
        `insert into account_invitations (account_id, email, token_hash, invited_by, expires_at, accepted_at, accepted_by)
         values ($1, $2, $3, $4, now() + interval '1 day', $5, $6)`,
        [account, email, label, owner, acceptedBy ? new Date() : null, acceptedBy],
      );
    await invitation("accepted-no-email", null, joined ?? null);
    await invitation("pending-no-email", null, null);
    await invitation("pending-mixed-case", "Friend@Example.COM", null);

    expect(statements.length).toBeGreaterThanOrEqual(3);
    for (const statement of statements) await client.query(statement);

    const { rows } = await client.query(
      "select token_hash, email from account_invitations order by token_hash",
    );
    expect(rows).toEqual([
      { token_hash: "accepted-no-email", email: "joined@example.com" },
      { token_hash: "pending-mixed-case", email: "friend@example.com" },
    ]);
    const { rows: column } = await client.query(
      "select is_nullable from information_schema.columns where table_name = 'account_invitations' and column_name = 'email'",
    );
    expect(column[0].is_nullable).toBe("NO");
  });
});

/** Draft flows of these names, in a new account of a new user with this email: their ids. */
async function draftFlows(email: string, names: string[]): Promise<string[]> {
  const { rows: users } = await client.query<{ id: string }>(
    "insert into users (name, email) values ('Author', $1) returning id",
    [email],
  );
  const { rows: accounts } = await client.query<{ id: string }>(
    "insert into accounts (name) values ('Flows') returning id",
  );
  const ids: string[] = [];
  for (const name of names) {
    const { rows } = await client.query<{ id: string }>(
      "insert into flows (account_id, user_id, name, status, trigger_type) values ($1, $2, $3, 'draft', 'keyword') returning id",
      [accounts[0]?.id, users[0]?.id, name],
    );
    ids.push(rows[0]?.id ?? "");
  }
  return ids;
}

// Migration 0022 moves each flow's node rows into one document a flow, run against rows written
// as before it (flow_nodes as 0000 and 0003 left it).
describe("migration 0022 and the nodes written before it", () => {
  it("keeps every node's id, key, type, config, position and created_at, in the order written", async () => {
    const moveNodes = readFileSync(path.join(MIGRATIONS_DIR, "0022_flow_graphs.sql"), "utf8")
      .split("--> statement-breakpoint")
      .map((statement) => statement.trim())
      .find((statement) => statement.includes('INSERT INTO "flow_graphs"'));
    expect(moveNodes).toBeDefined();
    await client.query(`create table flow_nodes (
      id uuid primary key default gen_random_uuid(), flow_id uuid not null references flows(id) on delete cascade,
      node_key text not null, node_type text not null, config jsonb not null,
      position_x double precision not null default 0, position_y double precision not null default 0,
      ordinal integer not null default 0, created_at timestamp(3) with time zone not null default now())`);
    const [withNodes, empty] = await draftFlows("author@example.com", ["With nodes", "Empty"]);
    // Two writes: the later one's nodes come after, each write's nodes in their ordinal order.
    await client.query(
      `insert into flow_nodes (id, flow_id, node_key, node_type, config, position_x, position_y, ordinal, created_at) values
         ('00000000-0000-4000-8000-000000000003', $1, 'late', 'end', '{}', 0, 0, 0, '2026-11-02T10:00:00.5Z'),
         ('00000000-0000-4000-8000-000000000002', $1, 'second', 'send_message', '{"text":"Hi","next_node_key":"late"}', 240.5, -10, 1, '2026-11-01T09:00:00Z'),
         ('00000000-0000-4000-8000-000000000001', $1, 'first', 'send_message', '{"text":"Hello"}', 0, 0, 0, '2026-11-01T09:00:00Z')`,
      [withNodes],
    );
    await client.query(moveNodes as string);

    const { rows } = await client.query("select flow_id, nodes::text as nodes from flow_graphs");
    expect(rows.map((r) => r.flow_id)).toEqual([withNodes]);
    expect(rows.map((r) => r.flow_id)).not.toContain(empty);
    expect(JSON.parse(rows[0].nodes)).toEqual([
      {
        id: "00000000-0000-4000-8000-000000000001",
        flow_id: withNodes,
        node_key: "first",
        node_type: "send_message",
        config: { text: "Hello" },
        position_x: 0,
        position_y: 0,
        created_at: "2026-11-01T09:00:00.000Z",
      },
      {
        id: "00000000-0000-4000-8000-000000000002",
        flow_id: withNodes,
        node_key: "second",
        node_type: "send_message",
        config: { text: "Hi", next_node_key: "late" },
        position_x: 240.5,
        position_y: -10,
        created_at: "2026-11-01T09:00:00.000Z",
      },
      {
        id: "00000000-0000-4000-8000-000000000003",
        flow_id: withNodes,
        node_key: "late",
        node_type: "end",
        config: {},
        position_x: 0,
        position_y: 0,
        created_at: "2026-11-02T10:00:00.500Z",
      },
    ]);
    await client.query("drop table flow_nodes");
  });
});

// Migration 0023: a flow's node document is stored as written. PostgreSQL would otherwise
// compress every document over 2 kB at each PUT and decompress it at each read.
describe("migration 0023: node documents stored uncompressed", () => {
  it("keeps a large document's bytes as they were written", async () => {
    const [flowId] = await draftFlows("writer@example.com", ["Big"]);
    // Very repetitive, so that compression would shrink it to a small part of its size.
    const nodes = Array.from({ length: 500 }, (_, i) => ({ node_key: `n${i}`, config: { text: "Hello" } }));
    await client.query("insert into flow_graphs (flow_id, nodes) values ($1, $2)", [
      flowId,
      JSON.stringify(nodes),
    ]);
    const { rows } = await client.query<{ stored: number; written: number }>(
      "select pg_column_size(nodes) as stored, octet_length(nodes::text) as written from flow_graphs where flow_id = $1",
      [flowId],
    );
    expect(rows[0]?.written).toBeGreaterThan(10_000);
    expect(rows[0]?.stored).toBeGreaterThanOrEqual(rows[0]?.written ?? Number.POSITIVE_INFINITY);
  });
});
