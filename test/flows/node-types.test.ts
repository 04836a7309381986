import { existsSync } from "node:fs";
import { builtinModules } from "node:module";
import path from "node:path";
import { build, type Rollup } from "vite";
import { describe, expect, it } from "vitest";
import { edgesOf, NODE_REGISTRY, NODE_TYPES, outgoingKeys } from "../../src/flows/node-types/index.js";

/**
 * The node types are one module per type on each side: src/flows/node-types/<type>.ts (config, checks,
 * edges, message, how a run moves) and console/src/features/flows/editor/node-forms/<type>.tsx
 * (inspector form, card summary). The console imports the service's modules, so they must run in a
 * browser.
 */

const root = path.resolve(import.meta.dirname, "../..");

/**
 * The console's registry of forms, loaded by path: it is type-checked with the console (the service's
 * tsconfig resolves imports the Node.js way, the console's the bundler's way).
 */
const consoleRegistry = path.join(root, "console/src/features/flows/editor/node-forms/index.ts");
const { NODE_FORMS } = (await import(consoleRegistry)) as {
  NODE_FORMS: Record<string, { summary: (config: Record<string, unknown>) => string }>;
};
const serverModule = (type: string) => path.join(root, "src/flows/node-types", `${type}.ts`);
const consoleForm = (type: string) =>
  path.join(root, "console/src/features/flows/editor/node-forms", `${type}.tsx`);

describe("the node type registries", () => {
  it("give every registered type a server module of its name and a console form of its name", () => {
    expect(NODE_TYPES.length).toBeGreaterThan(0);
    for (const type of NODE_TYPES) {
      expect(NODE_REGISTRY[type].type, `${type}: its module's type`).toBe(type);
      expect(existsSync(serverModule(type)), serverModule(type)).toBe(true);
      expect(existsSync(consoleForm(type)), consoleForm(type)).toBe(true);
    }
    expect(Object.keys(NODE_FORMS).sort()).toEqual([...NODE_TYPES].sort());
  });

  it("give every type a label, a default config the editor starts from, and a card summary of it", () => {
    for (const type of NODE_TYPES) {
      const module = NODE_REGISTRY[type];
      expect(module.label.trim(), type).not.toBe("");
      expect(typeof NODE_FORMS[type]!.summary(structuredClone(module.defaultConfig)), type).toBe("string");
    }
  });

  it("let an edge be pointed at a node and cleared again, as the editor does", () => {
    for (const type of NODE_TYPES) {
      const config = structuredClone(NODE_REGISTRY[type].defaultConfig);
      for (const [i, edge] of edgesOf({ node_type: type, config }).entries()) {
        const pointed = edge.set(config, "elsewhere");
        const after = edgesOf({ node_type: type, config: pointed })[i];
        expect(after?.target, `${type} ${edge.handle}`).toBe("elsewhere");
        expect(outgoingKeys({ node_type: type, config: pointed }), type).toContain("elsewhere");
        expect(edgesOf({ node_type: type, config: edge.set(pointed, undefined) })[i]?.target).toBeUndefined();
      }
    }
  });
});

describe("the module the console imports", () => {
  it("bundles for the browser without a Node.js built-in or a package of the service", {
    timeout: 60_000,
  }, async () => {
    const imported: string[] = [];
    const result = (await build({
      configFile: false,
      root,
      logLevel: "silent",
      plugins: [
        {
          name: "record-imports",
          enforce: "pre",
          resolveId(source) {
            if (source.startsWith("node:") || builtinModules.includes(source) || !source.startsWith(".")) {
              if (!source.startsWith("/") && !source.startsWith("\0")) imported.push(source);
            }
            return null;
          },
        },
      ],
      build: {
        write: false,
        minify: false,
        target: "es2022",
        lib: {
          entry: path.join(root, "src/flows/node-types/index.ts"),
          formats: ["es"],
          fileName: "node-types",
        },
      },
    })) as Rollup.RollupOutput[] | Rollup.RollupOutput;
    const outputs = Array.isArray(result) ? result : [result];
    const files = outputs.flatMap((o) => o.output).filter((f): f is Rollup.OutputChunk => f.type === "chunk");
    // Only the service's own pure modules (relative imports): no node:*, no pg, drizzle or fastify.
    expect(imported).toEqual([]);
    expect(files.length).toBe(1);
    const modules = Object.keys(files[0]?.modules ?? {}).map((m) => path.relative(root, m));
    expect(modules.every((m) => m.startsWith("src/"))).toBe(true);
    expect(modules).toContain("src/flows/node-types/index.ts");
  });
});
