import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { EVENT_TYPES } from "../../src/events/types.js";

/**
 * src/events/README.md says where each event type is emitted. These checks keep that table true:
 * one row per subscribable type, and every trigger, file and function it names exists.
 */
const SRC = path.resolve(import.meta.dirname, "../../src");
const readme = readFileSync(path.join(SRC, "events/README.md"), "utf8");
const rows = readme
  .split("\n")
  .filter((line) => /^\| `[a-z_]+\.[a-z_]+` +\|/.test(line))
  .map((line) => line.split("|").map((cell) => cell.trim()));
const migrations = readdirSync(path.join(SRC, "db/migrations"))
  .filter((f) => f.endsWith(".sql"))
  .map((f) => readFileSync(path.join(SRC, "db/migrations", f), "utf8"))
  .join("\n");
/** `file.ts:name` references in a cell. */
const references = (cell: string) => [...cell.matchAll(/`([\w/.-]+\.ts):(\w+)`/g)].map((m) => [m[1]!, m[2]!]);

describe("src/events/README.md", () => {
  it("has one row for each event type an endpoint may subscribe to", () => {
    expect(rows.map((cells) => cells[1]?.replaceAll("`", ""))).toEqual([...EVENT_TYPES]);
  });

  it("names triggers that the migrations create", () => {
    const triggers = rows.flatMap((cells) => [...(cells[3] ?? "").matchAll(/`(\w+_account_event_\w+)`/g)]);
    expect(triggers.length).toBeGreaterThan(0);
    for (const [, name] of triggers)
      expect(migrations, name).toMatch(new RegExp(`CREATE TRIGGER ${name}\\b`));
  });

  it("names files and functions that exist (file:function, under src/)", () => {
    const named = rows.flatMap((cells) => [...references(cells[3] ?? ""), ...references(cells[4] ?? "")]);
    expect(named.length).toBeGreaterThan(20);
    const missing = named.filter(([file, name]) => {
      const full = path.join(SRC, file!);
      if (!existsSync(full)) return true;
      return !new RegExp(`(function\\*? |const |^\\s+(async )?)${name}\\b`, "m").test(
        readFileSync(full, "utf8"),
      );
    });
    expect(missing).toEqual([]);
  });
});
