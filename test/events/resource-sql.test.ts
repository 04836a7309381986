import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { MIGRATIONS_DIR } from "../../src/db/migrate.js";
import { eventJsonFunctions } from "../../src/events/resource-sql.js";
import { toRunJson } from "../../src/flows/runner/routes.js";

/**
 * The SQL functions that build event data are generated from the API's
 * serializers (src/events/resource-sql.ts); the migrations hold them. The
 * latest definition of each, across the migrations in the order they apply,
 * must be what the serializers generate today: a field added to the API's
 * JSON needs a new migration with the SQL this test prints. (Event data equal
 * to the API's answers, row by row: event-data.test.ts.)
 */

const journal = JSON.parse(readFileSync(path.join(MIGRATIONS_DIR, "meta/_journal.json"), "utf8")) as {
  entries: Array<{ tag: string }>;
};
const migrations = journal.entries.map((e) =>
  readFileSync(path.join(MIGRATIONS_DIR, `${e.tag}.sql`), "utf8"),
);

/** The last definition of the function in the migrations, from its name to the end of its body. */
function latestDefinition(name: string): string | undefined {
  const pattern = new RegExp(
    `CREATE (?:OR REPLACE )?FUNCTION ${name}\\([\\s\\S]*?AS \\$\\$[\\s\\S]*?\\$\\$`,
    "g",
  );
  return migrations.flatMap((sql) => [...sql.matchAll(pattern)].map((m) => m[0])).at(-1);
}

/** Whitespace is layout; CREATE and CREATE OR REPLACE define the same function. */
const normal = (sql: string) =>
  sql
    .replace(/^CREATE (OR REPLACE )?FUNCTION/, "CREATE FUNCTION")
    .replace(/\$\$;$/, "$$$$")
    .replace(/\s+/g, "");

describe("the SQL of event data", () => {
  const generated = eventJsonFunctions(toRunJson);

  it("covers every function that builds a resource's JSON", () => {
    expect(Object.keys(generated).sort()).toEqual([
      "api_conversation_json",
      "api_flow_run_json",
      "api_message_json",
      "api_message_reactions_json",
    ]);
  });

  for (const [name, sql] of Object.entries(generated)) {
    it(`${name} in the migrations is what the API's serializer generates`, () => {
      const stored = latestDefinition(name);
      expect(stored, `${name} is defined by no migration`).toBeDefined();
      expect(normal(stored ?? ""), `a new migration needs:\n${sql}`).toBe(normal(sql));
    });
  }
});
