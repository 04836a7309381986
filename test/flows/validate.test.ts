import { describe, expect, it } from "vitest";
import { type GraphInput, hasBlockingIssues, validateFlowGraph } from "../../src/flows/validate.js";

type Node = GraphInput["nodes"][number];

/** A complete, valid flow touching every node type; each test breaks one thing. */
function validFlow(): GraphInput & { nodes: Node[] } {
  return {
    trigger_type: "keyword",
    trigger_config: { keywords: ["hello"] },
    entry_node_id: "start",
    fallback_policy: {
      on_unknown_reply: "reprompt",
      max_reprompts: 2,
      on_timeout_hours: 24,
      on_exhaust: "handoff",
    },
    nodes: [
      { node_key: "start", node_type: "start", config: { next_node_key: "greet" } },
      {
        node_key: "greet",
        node_type: "send_message",
        config: { text: "Hi {{contact.name}}", next_node_key: "menu" },
      },
      {
        node_key: "menu",
        node_type: "send_buttons",
        config: {
          text: "Pick one",
          buttons: [
            { reply_id: "a", title: "List", next_node_key: "list" },
            { reply_id: "b", title: "Photo", next_node_key: "photo" },
          ],
        },
      },
      {
        node_key: "list",
        node_type: "send_list",
        config: {
          text: "Topics",
          button_label: "Open",
          sections: [
            { rows: [{ reply_id: "r1", title: "Ask", description: "Ask us", next_node_key: "ask" }] },
          ],
        },
      },
      {
        node_key: "photo",
        node_type: "send_media",
        config: { media_type: "image", media_url: "https://example.com/a.png", next_node_key: "ask" },
      },
      {
        node_key: "ask",
        node_type: "collect_input",
        config: { prompt_text: "Your email?", var_key: "email", validation: "email", next_node_key: "check" },
      },
      {
        node_key: "check",
        node_type: "condition",
        config: {
          subject: "var",
          subject_key: "email",
          operator: "contains",
          value: "@vip.example",
          true_next: "tag",
          false_next: "bye",
        },
      },
      { node_key: "tag", node_type: "set_tag", config: { mode: "add", tag: "vip", next_node_key: "agent" } },
      { node_key: "agent", node_type: "handoff", config: { note: "VIP {{vars.email}}" } },
      { node_key: "bye", node_type: "end", config: {} },
    ],
  };
}

const configOf = (flow: GraphInput, key: string) =>
  flow.nodes.find((n) => n.node_key === key)!.config as Record<string, unknown>;

const errors = (flow: GraphInput) => validateFlowGraph(flow).filter((i) => i.severity === "error");
const codes = (flow: GraphInput) => errors(flow).map((i) => i.code);

describe("validateFlowGraph", () => {
  it("finds nothing wrong with a complete flow using every node type", () => {
    expect(validateFlowGraph(validFlow())).toEqual([]);
  });

  describe("entry node", () => {
    it("blocks a flow without an entry node", () => {
      const flow = { ...validFlow(), entry_node_id: null };
      expect(errors(flow)).toEqual([
        expect.objectContaining({
          severity: "error",
          code: "no_entry_node",
          message: expect.stringContaining("entry"),
        }),
      ]);
    });

    it("blocks an entry node key that names no node", () => {
      const flow = { ...validFlow(), entry_node_id: "nowhere" };
      expect(errors(flow)).toEqual([
        expect.objectContaining({
          code: "entry_node_missing",
          message: expect.stringContaining('"nowhere"'),
        }),
      ]);
    });

    it("blocks an empty flow", () => {
      expect(codes({ ...validFlow(), nodes: [] })).toEqual(["entry_node_missing"]);
    });
  });

  describe("edges and keys", () => {
    it("blocks an edge to a missing node and names the node holding it", () => {
      const flow = validFlow();
      configOf(flow, "greet").next_node_key = "ghost";
      expect(errors(flow)).toEqual([
        expect.objectContaining({
          code: "missing_target",
          node_key: "greet",
          message: expect.stringContaining('"ghost"'),
        }),
      ]);
    });

    it("follows button, list row and condition edges when looking for missing targets", () => {
      const flow = validFlow();
      (configOf(flow, "menu").buttons as Record<string, unknown>[])[1]!.next_node_key = "ghost1";
      const sections = configOf(flow, "list").sections as { rows: Record<string, unknown>[] }[];
      sections[0]!.rows[0]!.next_node_key = "ghost2";
      configOf(flow, "check").false_next = "ghost3";
      expect(errors(flow).map((i) => [i.code, i.node_key])).toEqual([
        ["missing_target", "menu"],
        ["missing_target", "list"],
        ["missing_target", "check"],
      ]);
    });

    it("blocks duplicate node keys", () => {
      const flow = validFlow();
      flow.nodes.push({ node_key: "bye", node_type: "end", config: {} });
      expect(errors(flow)).toEqual([
        expect.objectContaining({ code: "duplicate_node_key", node_key: "bye" }),
      ]);
    });

    it("blocks a node type it does not know", () => {
      const flow = validFlow();
      flow.nodes.push({ node_key: "x", node_type: "teleport", config: {} });
      expect(codes(flow)).toContain("unknown_node_type");
    });

    it("warns about unreachable nodes without blocking", () => {
      const flow = validFlow();
      flow.nodes.push({ node_key: "orphan", node_type: "end", config: {} });
      const issues = validateFlowGraph(flow);
      expect(issues).toEqual([
        {
          severity: "warning",
          code: "unreachable_node",
          node_key: "orphan",
          message: expect.stringContaining("orphan"),
        },
      ]);
      expect(hasBlockingIssues(issues)).toBe(false);
    });

    it("treats a send_message without next_node_key as the end of the run", () => {
      const flow = validFlow();
      delete configOf(flow, "greet").next_node_key;
      const issues = validateFlowGraph(flow);
      expect(hasBlockingIssues(issues)).toBe(false);
      expect(issues.every((i) => i.code === "unreachable_node")).toBe(true);
    });
  });

  describe("buttons", () => {
    it("blocks a button node without buttons, with none and with four", () => {
      const none = validFlow();
      configOf(none, "menu").buttons = [];
      expect(codes(none)).toEqual(["button_count"]);

      const four = validFlow();
      const buttons = configOf(four, "menu").buttons as unknown[];
      buttons.push(
        { reply_id: "c", title: "C", next_node_key: "bye" },
        { reply_id: "d", title: "D", next_node_key: "bye" },
      );
      expect(codes(four)).toEqual(["button_count"]);

      const missing = validFlow();
      delete configOf(missing, "menu").buttons;
      expect(codes(missing)).toEqual(["missing_field"]);
    });

    it("accepts three buttons and a 20-character title, blocks a 21-character one", () => {
      const flow = validFlow();
      const buttons = configOf(flow, "menu").buttons as Record<string, unknown>[];
      buttons.push({ reply_id: "c", title: "x".repeat(20), next_node_key: "bye" });
      expect(codes(flow)).toEqual([]);
      buttons[2]!.title = "x".repeat(21);
      expect(errors(flow)).toEqual([
        expect.objectContaining({
          code: "text_too_long",
          node_key: "menu",
          message: expect.stringContaining("title"),
        }),
      ]);
    });

    it("blocks a button without a title, reply_id or target, and reply_ids used twice", () => {
      const flow = validFlow();
      configOf(flow, "menu").buttons = [
        { reply_id: "a", title: "", next_node_key: "" },
        { title: "B", next_node_key: "bye" },
      ];
      expect(codes(flow)).toEqual(["missing_field", "missing_field", "missing_field"]);

      const twice = validFlow();
      (configOf(twice, "menu").buttons as Record<string, unknown>[])[1]!.reply_id = "a";
      expect(codes(twice)).toEqual(["duplicate_reply_id"]);
    });

    it("limits header and footer to 60 characters", () => {
      const flow = validFlow();
      configOf(flow, "menu").header_text = "h".repeat(61);
      configOf(flow, "menu").footer_text = "f".repeat(60);
      expect(errors(flow)).toEqual([
        expect.objectContaining({ code: "text_too_long", message: expect.stringContaining("header_text") }),
      ]);
    });
  });

  describe("lists", () => {
    const withRows = (count: number, sections = 1) => {
      const flow = validFlow();
      const perSection = Math.ceil(count / sections);
      configOf(flow, "list").sections = Array.from({ length: sections }, (_, s) => ({
        title: `Section ${s}`,
        rows: Array.from({ length: Math.min(perSection, count - s * perSection) }, (_, r) => ({
          reply_id: `r${s}-${r}`,
          title: `Row ${r}`,
          next_node_key: "ask",
        })),
      }));
      return flow;
    };

    it("accepts 10 rows across sections and blocks 11", () => {
      expect(codes(withRows(10, 2))).toEqual([]);
      expect(errors(withRows(11, 2))).toEqual([
        expect.objectContaining({
          code: "list_row_count",
          node_key: "list",
          message: expect.stringContaining("11"),
        }),
      ]);
    });

    it("blocks a row title over 24 characters and a description over 72", () => {
      const flow = validFlow();
      const row = (configOf(flow, "list").sections as { rows: Record<string, unknown>[] }[])[0]!.rows[0]!;
      row.title = "t".repeat(24);
      row.description = "d".repeat(72);
      expect(codes(flow)).toEqual([]);
      row.title = "t".repeat(25);
      row.description = "d".repeat(73);
      expect(errors(flow).map((i) => i.message)).toEqual([
        expect.stringContaining("title is 25 characters; the limit is 24"),
        expect.stringContaining("description is 73 characters; the limit is 72"),
      ]);
    });

    it("requires text, button_label, sections with rows, and titles when there are several sections", () => {
      const flow = validFlow();
      delete configOf(flow, "list").button_label;
      expect(codes(flow)).toEqual(["missing_field"]);

      const noSections = validFlow();
      configOf(noSections, "list").sections = [];
      expect(codes(noSections)).toEqual(["missing_field"]);

      const emptySection = validFlow();
      (configOf(emptySection, "list").sections as unknown[]).push({ title: "Empty", rows: [] });
      expect(codes(emptySection)).toEqual(["missing_field", "missing_field"]);
    });

    it("blocks duplicate reply_ids across sections", () => {
      const flow = withRows(4, 2);
      const sections = configOf(flow, "list").sections as { rows: Record<string, unknown>[] }[];
      sections[1]!.rows[0]!.reply_id = sections[0]!.rows[0]!.reply_id;
      expect(codes(flow)).toEqual(["duplicate_reply_id"]);
    });
  });

  describe("required config fields per type", () => {
    it.each([
      ["start", "start", "next_node_key"],
      ["send_message", "greet", "text"],
      ["send_buttons", "menu", "text"],
      ["send_list", "list", "text"],
      ["send_media", "photo", "media_type"],
      ["send_media", "photo", "media_url"],
      ["collect_input", "ask", "prompt_text"],
      ["collect_input", "ask", "var_key"],
      ["collect_input", "ask", "next_node_key"],
      ["condition", "check", "subject"],
      ["condition", "check", "subject_key"],
      ["condition", "check", "operator"],
      ["condition", "check", "true_next"],
      ["condition", "check", "false_next"],
      ["set_tag", "tag", "mode"],
      ["set_tag", "tag", "tag"],
      ["set_tag", "tag", "next_node_key"],
    ])("blocks a %s node without %s", (_type, key, field) => {
      const flow = validFlow();
      delete configOf(flow, key)[field];
      expect(errors(flow)).toContainEqual(
        expect.objectContaining({
          code: "missing_field",
          node_key: key,
          message: expect.stringContaining(field),
        }),
      );
    });

    it("treats a blank text like a missing one", () => {
      const flow = validFlow();
      configOf(flow, "greet").text = "   ";
      expect(codes(flow)).toEqual(["missing_field"]);
    });

    it("blocks body texts over 1024 characters and accepts exactly 1024", () => {
      const flow = validFlow();
      configOf(flow, "greet").text = "x".repeat(1024);
      configOf(flow, "ask").prompt_text = "x".repeat(1024);
      expect(codes(flow)).toEqual([]);
      configOf(flow, "greet").text = "x".repeat(1025);
      configOf(flow, "ask").prompt_text = "x".repeat(1025);
      expect(errors(flow).map((i) => [i.code, i.node_key])).toEqual([
        ["text_too_long", "greet"],
        ["text_too_long", "ask"],
      ]);
    });

    it("blocks values outside each enum", () => {
      const flow = validFlow();
      configOf(flow, "photo").media_type = "gif";
      configOf(flow, "ask").validation = "zip";
      configOf(flow, "check").operator = "matches";
      configOf(flow, "tag").mode = "toggle";
      expect(errors(flow).map((i) => [i.code, i.node_key])).toEqual([
        ["invalid_value", "photo"],
        ["invalid_value", "ask"],
        ["invalid_value", "check"],
        ["invalid_value", "tag"],
      ]);
    });

    it("blocks a media_url that is not http(s)", () => {
      const flow = validFlow();
      configOf(flow, "photo").media_url = "file:///etc/passwd";
      expect(errors(flow)).toEqual([expect.objectContaining({ code: "invalid_value", node_key: "photo" })]);
    });

    it("requires a valid regex when collect_input validates by regex", () => {
      const flow = validFlow();
      configOf(flow, "ask").validation = "regex";
      expect(codes(flow)).toEqual(["missing_field"]);
      configOf(flow, "ask").regex = "([a-z";
      expect(codes(flow)).toEqual(["invalid_value"]);
      configOf(flow, "ask").regex = "^[A-Z]{2}\\d{4}$";
      expect(codes(flow)).toEqual([]);
    });

    it("requires a value for equals and contains conditions, not for present", () => {
      const flow = validFlow();
      delete configOf(flow, "check").value;
      expect(codes(flow)).toEqual(["missing_field"]);
      configOf(flow, "check").operator = "present";
      expect(codes(flow)).toEqual([]);
    });

    it("accepts handoff and end nodes with empty configs", () => {
      const flow = validFlow();
      configOf(flow, "agent").note = undefined;
      expect(codes(flow)).toEqual([]);
    });
  });

  describe("trigger and fallback policy", () => {
    it("blocks a keyword flow without keywords", () => {
      for (const trigger_config of [{}, { keywords: [] }, { keywords: ["  "] }, { keywords: "hello" }]) {
        expect(errors({ ...validFlow(), trigger_config })).toEqual([
          expect.objectContaining({ code: "no_keywords", message: expect.stringContaining("keyword") }),
        ]);
      }
    });

    it("does not ask other triggers for keywords", () => {
      expect(codes({ ...validFlow(), trigger_type: "first_inbound_message", trigger_config: {} })).toEqual(
        [],
      );
      expect(codes({ ...validFlow(), trigger_type: "manual", trigger_config: {} })).toEqual([]);
    });

    it("blocks a bad match_type, case_sensitive or blank keyword next to good ones", () => {
      const flow = {
        ...validFlow(),
        trigger_config: { keywords: ["hi", ""], match_type: "fuzzy", case_sensitive: "no" },
      };
      expect(codes(flow)).toEqual([
        "invalid_trigger_config",
        "invalid_trigger_config",
        "invalid_trigger_config",
      ]);
    });

    it("blocks fallback policy values outside their ranges and accepts a partial policy", () => {
      expect(codes({ ...validFlow(), fallback_policy: { max_reprompts: 1 } })).toEqual([]);
      const flow = {
        ...validFlow(),
        fallback_policy: {
          on_unknown_reply: "shout",
          max_reprompts: -1,
          on_timeout_hours: 0,
          on_exhaust: "loop",
        },
      };
      expect(codes(flow)).toEqual([
        "invalid_fallback_policy",
        "invalid_fallback_policy",
        "invalid_fallback_policy",
        "invalid_fallback_policy",
      ]);
    });
  });

  it("warns about placeholders the runner cannot fill", () => {
    const flow = validFlow();
    configOf(flow, "greet").text = "Hi {{contact.email}} {{ vars.name }}";
    expect(validateFlowGraph(flow)).toEqual([
      expect.objectContaining({ severity: "warning", code: "unknown_placeholder", node_key: "greet" }),
    ]);
  });

  it("lists every blocking issue at once", () => {
    const flow = { ...validFlow(), trigger_config: {} };
    configOf(flow, "greet").next_node_key = "ghost";
    configOf(flow, "menu").buttons = [];
    expect(codes(flow).sort()).toEqual(["button_count", "missing_target", "no_keywords"]);
  });
});
