import { describe, expect, it } from "vitest";
import { DEFAULT_FALLBACK_POLICY } from "../../src/db/schema/flows.js";
import {
  CONFIG_MAX_DEPTH,
  checkNodeShapes,
  configProblem,
  MAX_NODES_PER_FLOW,
  outgoingKeys,
} from "../../src/flows/nodes.js";
import { FLOW_TEMPLATES, templateSummaries } from "../../src/flows/templates.js";
import { resolveFallbackPolicy } from "../../src/flows/triggers.js";
import { validateFlowGraph } from "../../src/flows/validate.js";
import { jsonValueProblem } from "../../src/http/input.js";

/** An object nested `depth` levels deep, counting itself as level 1. */
function nested(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = {};
  for (let i = 1; i < depth; i++) value = { a: value };
  return value;
}

const shapeError = (nodes: unknown) => {
  try {
    checkNodeShapes(nodes);
  } catch (error) {
    return { status: (error as { status: number }).status, message: (error as Error).message };
  }
  return null;
};

describe("checkNodeShapes", () => {
  it("accepts incomplete drafts and defaults positions to 0", () => {
    expect(
      checkNodeShapes([
        { node_key: "a", node_type: "send_buttons", config: {} },
        { node_key: "b", node_type: "end", config: {}, position_x: 12.5, position_y: -3 },
      ]),
    ).toEqual([
      { node_key: "a", node_type: "send_buttons", config: {}, position_x: 0, position_y: 0 },
      { node_key: "b", node_type: "end", config: {}, position_x: 12.5, position_y: -3 },
    ]);
  });

  it.each([
    ["nodes is an object", { node_key: "a" }, "nodes: must be an array"],
    ["a node is a string", ["a"], "nodes[0]: must be an object"],
    [
      "node_key is a number",
      [{ node_key: 1, node_type: "end", config: {} }],
      "nodes[0]: node_key must be a string",
    ],
    [
      "node_key is empty",
      [{ node_key: "", node_type: "end", config: {} }],
      "nodes[0]: node_key must not be empty",
    ],
    [
      "node_key is 101 characters",
      [{ node_key: "k".repeat(101), node_type: "end", config: {} }],
      "nodes[0]: node_key must be at most 100 characters",
    ],
    [
      "node_type is missing",
      [{ node_key: "a", config: {} }],
      'nodes[0] (node_key "a"): node_type must be a string',
    ],
    [
      "node_type is unknown",
      [{ node_key: "a", node_type: "teleport", config: {} }],
      'nodes[0] (node_key "a"): node_type "teleport" is not one of',
    ],
    [
      "config is an array",
      [{ node_key: "a", node_type: "end", config: [] }],
      'nodes[0] (node_key "a"): config must be an object',
    ],
    [
      "config is null",
      [{ node_key: "a", node_type: "end", config: null }],
      'nodes[0] (node_key "a"): config must be an object',
    ],
    [
      "position_x is a string",
      [{ node_key: "a", node_type: "end", config: {}, position_x: "1" }],
      'nodes[0] (node_key "a"): position_x must be a number',
    ],
    [
      "a key repeats",
      [
        { node_key: "a", node_type: "end", config: {} },
        { node_key: "a", node_type: "end", config: {} },
      ],
      'nodes[1] (node_key "a"): node_key is used by an earlier node',
    ],
    [
      "config is nested 21 levels",
      [{ node_key: "deep", node_type: "end", config: nested(21) }],
      'nodes[0] (node_key "deep"): config is nested deeper than 20 levels',
    ],
  ])("answers 400 naming the node when %s", (_label, nodes, message) => {
    expect(shapeError(nodes)).toEqual({ status: 400, message: expect.stringContaining(message) });
  });

  it("accepts a 100-character node_key and config nested exactly 20 levels", () => {
    expect(
      shapeError([{ node_key: "k".repeat(100), node_type: "end", config: nested(CONFIG_MAX_DEPTH) }]),
    ).toBeNull();
  });

  it("caps the node count so one insert always fits", () => {
    const nodes = Array.from({ length: MAX_NODES_PER_FLOW + 1 }, (_, i) => ({
      node_key: `n${i}`,
      node_type: "end",
      config: {},
    }));
    expect(shapeError(nodes)?.message).toContain(`at most ${MAX_NODES_PER_FLOW} nodes`);
    expect(shapeError(nodes.slice(1))).toBeNull();
  });
});

describe("configProblem", () => {
  it("counts arrays as levels and stops at hostile depth", () => {
    let deep: unknown = [];
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(configProblem(deep)).toBe("is nested deeper than 20 levels");
    expect(jsonValueProblem({ a: [[{}]] }, 3)).toBe("is nested deeper than 3 levels");
    expect(jsonValueProblem({ a: [[1]] }, 3)).toBeNull();
  });

  it("rejects NUL characters and unpaired surrogates in keys and values, which Postgres cannot store", () => {
    expect(configProblem({ text: "a\u0000b" })).toBe(
      "contains a string that must not contain NUL characters or unpaired surrogates",
    );
    expect(configProblem({ list: ["ok", "\uD800"] })).toMatch(/unpaired surrogates/);
    expect(configProblem({ "a\u0000": 1 })).toBe(
      "contains a key that must not contain NUL characters or unpaired surrogates",
    );
    expect(configProblem({ "\uDC00": 1 })).toMatch(/key that/);
    expect(configProblem({ text: "emoji \uD83D\uDE00 is a valid pair" })).toBeNull();
  });
});

describe("outgoingKeys", () => {
  it("lists each edge of each node type once", () => {
    expect(outgoingKeys({ node_type: "start", config: { next_node_key: "a" } })).toEqual(["a"]);
    expect(
      outgoingKeys({
        node_type: "send_buttons",
        config: { buttons: [{ next_node_key: "a" }, { next_node_key: "b" }, { next_node_key: "a" }] },
      }),
    ).toEqual(["a", "b"]);
    expect(
      outgoingKeys({
        node_type: "send_list",
        config: { sections: [{ rows: [{ next_node_key: "x" }] }, { rows: [{ next_node_key: "y" }] }] },
      }),
    ).toEqual(["x", "y"]);
    expect(outgoingKeys({ node_type: "condition", config: { true_next: "t", false_next: "f" } })).toEqual([
      "t",
      "f",
    ]);
    expect(outgoingKeys({ node_type: "handoff", config: { next_node_key: "ignored" } })).toEqual([]);
    expect(outgoingKeys({ node_type: "end", config: {} })).toEqual([]);
  });

  it("tolerates draft configs with missing or mistyped fields", () => {
    expect(outgoingKeys({ node_type: "send_buttons", config: { buttons: "nope" } })).toEqual([]);
    expect(outgoingKeys({ node_type: "send_list", config: { sections: [null, { rows: [1] }] } })).toEqual([]);
    expect(outgoingKeys({ node_type: "send_message", config: null })).toEqual([]);
  });
});

describe("resolveFallbackPolicy", () => {
  it("fills missing and invalid fields from the defaults", () => {
    expect(resolveFallbackPolicy({})).toEqual(DEFAULT_FALLBACK_POLICY);
    expect(resolveFallbackPolicy({ max_reprompts: 5, on_exhaust: "loop" })).toEqual({
      ...DEFAULT_FALLBACK_POLICY,
      max_reprompts: 5,
    });
  });
});

describe("templates", () => {
  it.each(FLOW_TEMPLATES.map((t) => [t.slug, t] as const))(
    "%s passes the activation validator",
    (_slug, t) => {
      const issues = validateFlowGraph({ ...t, fallback_policy: DEFAULT_FALLBACK_POLICY });
      expect(issues).toEqual([]);
    },
  );

  it.each(FLOW_TEMPLATES.map((t) => [t.slug, t] as const))(
    "%s passes its own node shape check",
    (_slug, t) => {
      expect(checkNodeShapes(t.nodes)).toEqual(t.nodes);
    },
  );

  it.each(FLOW_TEMPLATES.map((t) => [t.slug, t] as const))(
    "%s is laid out left to right with no two nodes on one spot",
    (_slug, t) => {
      const byKey = new Map(t.nodes.map((n) => [n.node_key, n]));
      for (const node of t.nodes) {
        for (const target of outgoingKeys(node)) {
          expect(byKey.get(target)!.position_x, `${node.node_key} -> ${target}`).toBeGreaterThan(
            node.position_x,
          );
        }
      }
      const spots = new Set(t.nodes.map((n) => `${n.position_x},${n.position_y}`));
      expect(spots.size).toBe(t.nodes.length);
    },
  );

  it("offers the three documented slugs with their triggers", () => {
    expect(templateSummaries().map((t) => [t.slug, t.trigger_type])).toEqual([
      ["welcome_menu", "keyword"],
      ["faq_bot", "keyword"],
      ["lead_capture", "first_inbound_message"],
    ]);
    const keywords = Object.fromEntries(FLOW_TEMPLATES.map((t) => [t.slug, t.trigger_config.keywords]));
    expect(keywords).toEqual({
      welcome_menu: ["support", "help", "hi"],
      faq_bot: ["faq", "question", "info"],
      lead_capture: undefined,
    });
  });

  it("hands off from every welcome_menu button, ends faq_bot answers, and notes the lead's answers", () => {
    const [welcome, faq, lead] = FLOW_TEMPLATES;
    const types = (t: typeof welcome, keys: string[]) =>
      keys.map((k) => t!.nodes.find((n) => n.node_key === k)!.node_type);
    const menu = welcome!.nodes.find((n) => n.node_type === "send_buttons")!;
    expect(types(welcome, outgoingKeys(menu))).toEqual(["handoff", "handoff", "handoff"]);

    const list = faq!.nodes.find((n) => n.node_type === "send_list")!;
    for (const answer of outgoingKeys(list)) {
      const node = faq!.nodes.find((n) => n.node_key === answer)!;
      expect(types(faq, outgoingKeys(node))).toEqual(["end"]);
    }

    const asked = lead!.nodes.filter((n) => n.node_type === "collect_input").map((n) => n.config.var_key);
    expect(asked).toEqual(["name", "email", "company"]);
    const note = lead!.nodes.find((n) => n.node_type === "handoff")!.config.note as string;
    for (const v of asked) expect(note).toContain(`{{vars.${v}}}`);
  });
});
