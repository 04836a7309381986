import { readFileSync } from "node:fs";
import path from "node:path";
import semver from "semver";
import { describe, expect, it } from "vitest";

/**
 * `npm install` on Node 20 (what the README and `engines` say) without EBADENGINE: every locked
 * package accepts Node 20.19 (content-disposition and cookie are pinned to their Node 18+ majors
 * by `overrides` in package.json; their Node 22 majors came through @fastify/static and
 * light-my-request).
 */
describe("the locked dependencies", () => {
  it("all accept Node 20", () => {
    const root = path.resolve(import.meta.dirname, "../..");
    const lock = JSON.parse(readFileSync(path.join(root, "package-lock.json"), "utf8")) as {
      packages: Record<string, { version?: string; engines?: { node?: string } | string[] }>;
    };
    const refused = Object.entries(lock.packages)
      .filter(([name, p]) => name !== "" && !Array.isArray(p.engines) && p.engines?.node)
      .filter(([, p]) => !semver.satisfies("20.19.0", (p.engines as { node: string }).node))
      .map(([name, p]) => `${name}@${p.version} wants node ${(p.engines as { node: string }).node}`);
    expect(refused).toEqual([]);
  });
});
