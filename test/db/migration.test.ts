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
