import type { FlowNode, Issue, NodeType } from "../../../lib/types";

/** One outgoing connection point of a node and the config field it writes. */
export interface Output {
  handle: string;
  label: string;
  target: string | undefined;
  set: (config: Record<string, unknown>, target: string | undefined) => Record<string, unknown>;
}

type Rec = Record<string, unknown>;
const str = (v: unknown) => (typeof v === "string" && v ? v : undefined);
const arr = (v: unknown): Rec[] => (Array.isArray(v) ? (v as Rec[]) : []);

function field(key: string, label: string): (c: Rec) => Output {
  return (c) => ({
    handle: key,
    label,
    target: str(c[key]),
    set: (config, target) => {
      const next = { ...config };
      if (target) next[key] = target;
      else delete next[key];
      return next;
    },
  });
}

/** Edges live in each node's config (product.md section 4): these are the places they can go. */
export function outputsOf(node: FlowNode): Output[] {
  const c = node.config;
  switch (node.node_type) {
    case "start":
    case "send_message":
    case "send_media":
    case "send_template":
    case "collect_input":
    case "set_tag":
    case "wait":
      return [field("next_node_key", "next")(c)];
    case "condition":
      return [field("true_next", "true")(c), field("false_next", "false")(c)];
    case "business_hours":
      return [field("open_node_key", "open")(c), field("closed_node_key", "closed")(c)];
    case "send_buttons":
      return arr(c.buttons).map((b, i) => ({
        handle: `button-${i}`,
        label: str(b.title) ?? `Button ${i + 1}`,
        target: str(b.next_node_key),
        set: (config, target) => ({
          ...config,
          buttons: arr(config.buttons).map((x, j) => (j === i ? { ...x, next_node_key: target ?? "" } : x)),
        }),
      }));
    case "send_list":
      return arr(c.sections).flatMap((s, si) =>
        arr(s.rows).map((r, ri) => ({
          handle: `row-${si}-${ri}`,
          label: str(r.title) ?? `Row ${ri + 1}`,
          target: str(r.next_node_key),
          set: (config: Rec, target: string | undefined) => ({
            ...config,
            sections: arr(config.sections).map((xs, sj) =>
              sj === si
                ? {
                    ...xs,
                    rows: arr(xs.rows).map((xr, rj) =>
                      rj === ri ? { ...xr, next_node_key: target ?? "" } : xr,
                    ),
                  }
                : xs,
            ),
          }),
        })),
      );
    default:
      return [];
  }
}

export const NODE_LABELS: Record<NodeType, string> = {
  start: "Start",
  send_message: "Send message",
  send_buttons: "Buttons",
  send_list: "List",
  send_media: "Media",
  send_template: "Template",
  collect_input: "Ask a question",
  condition: "Condition",
  set_tag: "Tag contact",
  wait: "Wait",
  business_hours: "Business hours",
  handoff: "Hand off to agent",
  end: "End",
};

export const DEFAULT_CONFIGS: Record<NodeType, Rec> = {
  start: {},
  send_message: { text: "" },
  send_buttons: { text: "", buttons: [{ reply_id: "option_1", title: "Option 1", next_node_key: "" }] },
  send_list: {
    text: "",
    button_label: "Choose",
    sections: [{ title: "", rows: [{ reply_id: "row_1", title: "Row 1", next_node_key: "" }] }],
  },
  send_media: { media_type: "image", media_url: "" },
  send_template: { template_name: "", language: "en_US" },
  collect_input: { prompt_text: "", var_key: "answer", validation: "text" },
  condition: {
    subject: "var",
    subject_key: "",
    operator: "equals",
    value: "",
    true_next: "",
    false_next: "",
  },
  set_tag: { mode: "add", tag: "" },
  wait: { minutes: 60 },
  business_hours: { open_node_key: "", closed_node_key: "" },
  handoff: { note: "" },
  end: {},
};

/** A key not used yet, from the node type (send_message_2 …). */
export function freshKey(type: NodeType, nodes: FlowNode[]) {
  const taken = new Set(nodes.map((n) => n.node_key));
  for (let i = 1; ; i++) {
    const key = `${type}_${i}`;
    if (!taken.has(key)) return key;
  }
}

/** Renames a node and every edge that points to it. */
export function renameNode(nodes: FlowNode[], from: string, to: string): FlowNode[] {
  return nodes.map((n) => {
    let config = n.config;
    for (const out of outputsOf({ ...n, config })) {
      if (out.target === from) config = out.set(config, to);
    }
    return { ...n, node_key: n.node_key === from ? to : n.node_key, config };
  });
}

/** Removes a node and clears the edges that pointed to it. */
export function removeNode(nodes: FlowNode[], key: string): FlowNode[] {
  return nodes
    .filter((n) => n.node_key !== key)
    .map((n) => {
      let config = n.config;
      for (const out of outputsOf({ ...n, config }))
        if (out.target === key) config = out.set(config, undefined);
      return { ...n, config };
    });
}

export function issuesByNode(issues: Issue[]) {
  const map = new Map<string, Issue[]>();
  for (const issue of issues) {
    if (!issue.node_key) continue;
    map.set(issue.node_key, [...(map.get(issue.node_key) ?? []), issue]);
  }
  return map;
}
