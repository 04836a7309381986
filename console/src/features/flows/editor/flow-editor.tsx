import "@xyflow/react/dist/style.css";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import {
  Background,
  type Connection,
  Controls,
  type Edge,
  type EdgeChange,
  MarkerType,
  type NodeChange,
  ReactFlow,
  type ReactFlowInstance,
} from "@xyflow/react";
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { Link, useParams } from "wouter";
import { HttpError } from "../../../lib/api";
import type { Flow, FlowNode, FlowWithNodes, Issue, NodeType, TriggerType } from "../../../lib/types";
import { Badge, FormError, ICONS, Icon, Spinner } from "../../../lib/ui";
import { useMembers } from "../../inbox/api";

/** About half a node's size on the canvas: a new node is centred on the view's middle. */
const NODE_HALF_WIDTH = 110;
const NODE_HALF_HEIGHT = 40;

import { isNodeType, NODE_REGISTRY } from "../../../../../src/flows/node-types/index.js";
import { fetchFlowWithNodes, flowKeys, saveFlow, setFlowStatus } from "../api";
import {
  DEFAULT_CONFIGS,
  freshKey,
  issuesByNode,
  NODE_LABELS,
  outputsOf,
  removeNode,
  renameNode,
} from "./graph";
import { Inspector } from "./inspector";
import { type CanvasNode, nodeTypes } from "./nodes";

interface Draft {
  name: string;
  trigger_type: TriggerType;
  trigger_config: Record<string, unknown>;
  entry_node_id: string | null;
  nodes: FlowNode[];
}

const HISTORY_LIMIT = 100;

function toDraft(data: FlowWithNodes): Draft {
  return {
    name: data.flow.name,
    trigger_type: data.flow.trigger_type,
    trigger_config: data.flow.trigger_config ?? {},
    entry_node_id: data.flow.entry_node_id,
    // Every saved node has a known type (a save checks it); the guard tells the compiler so.
    nodes: data.nodes.flatMap((n) =>
      isNodeType(n.node_type)
        ? [
            {
              node_key: n.node_key,
              node_type: n.node_type,
              config: n.config,
              position_x: n.position_x,
              position_y: n.position_y,
            },
          ]
        : [],
    ),
  };
}

/** The draft, its undo history, and whether it differs from what is saved. */
function useDraft() {
  const [draft, setDraft] = useState<Draft | null>(null);
  const [dirty, setDirty] = useState(false);
  const history = useRef<Draft[]>([]);
  const lastCoalesce = useRef<string | undefined>(undefined);
  const [canUndo, setCanUndo] = useState(false);

  const reset = useCallback((next: Draft) => {
    setDraft(next);
    history.current = [];
    lastCoalesce.current = undefined;
    setCanUndo(false);
    setDirty(false);
  }, []);

  /** Applies a change; typing into one field keeps one undo step (coalesceKey). */
  const change = useCallback((apply: (d: Draft) => Draft, coalesceKey?: string) => {
    setDraft((current) => {
      if (!current) return current;
      if (!coalesceKey || coalesceKey !== lastCoalesce.current) {
        history.current = [...history.current.slice(-HISTORY_LIMIT + 1), current];
      }
      lastCoalesce.current = coalesceKey;
      return apply(current);
    });
    setCanUndo(true);
    setDirty(true);
  }, []);

  const undo = useCallback(() => {
    const previous = history.current.pop();
    lastCoalesce.current = undefined;
    if (previous) {
      setDraft(previous);
      setDirty(true);
    }
    setCanUndo(history.current.length > 0);
  }, []);

  return { draft, dirty, setDirty, change, undo, canUndo, reset };
}

export default function FlowEditorPage() {
  const { id } = useParams<{ id: string }>();
  const client = useQueryClient();
  const members = useMembers();
  const canvasRef = useRef<HTMLElement>(null);
  const flowInstance = useRef<ReactFlowInstance<CanvasNode, Edge> | null>(null);
  const loaded = useQuery({
    queryKey: flowKeys.withNodes(id),
    queryFn: () => fetchFlowWithNodes(id),
    staleTime: Number.POSITIVE_INFINITY,
    refetchOnWindowFocus: false,
  });
  const { draft, dirty, setDirty, change, undo, canUndo, reset } = useDraft();
  const [status, setStatus] = useState<Flow["status"]>("draft");
  const [selected, setSelected] = useState<string | null>(null);
  const [issues, setIssues] = useState<Issue[]>([]);
  const [message, setMessage] = useState<string | null>(null);
  const [addType, setAddType] = useState<NodeType>("send_message");

  useEffect(() => {
    if (loaded.data) {
      reset(toDraft(loaded.data));
      setStatus(loaded.data.flow.status);
    }
  }, [loaded.data, reset]);

  // Ctrl/Cmd+Z undoes the last change (outside text fields, which keep their own undo).
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const target = e.target as HTMLElement;
      if (target.closest("input, textarea, select")) return;
      if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === "z" && !e.shiftKey) {
        e.preventDefault();
        undo();
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [undo]);

  const save = useMutation({
    mutationFn: async () => {
      if (!draft) throw new Error("Nothing to save");
      const entry =
        draft.entry_node_id ?? draft.nodes.find((n) => NODE_REGISTRY[n.node_type].begins)?.node_key ?? null;
      const trigger_config = Array.isArray(draft.trigger_config.keywords)
        ? {
            ...draft.trigger_config,
            keywords: (draft.trigger_config.keywords as string[]).map((k) => k.trim()).filter(Boolean),
          }
        : draft.trigger_config;
      return saveFlow(id, { ...draft, trigger_config, entry_node_id: entry });
    },
    onSuccess: () => {
      setDirty(false);
      setMessage("Saved");
      void client.invalidateQueries({ queryKey: flowKeys.all });
    },
  });

  const activate = useMutation({
    mutationFn: async (next: Flow["status"]) => {
      if (dirty) await save.mutateAsync();
      return setFlowStatus(id, next);
    },
    onSuccess: (result) => {
      setStatus(result.flow.status);
      setIssues(result.issues ?? []);
      setMessage(
        result.flow.status === "active"
          ? "Active: customers can trigger this flow now"
          : `Status: ${result.flow.status}`,
      );
      void client.invalidateQueries({ queryKey: flowKeys.all });
    },
    onError: (error) => {
      if (error instanceof HttpError && Array.isArray(error.body.issues)) {
        setIssues(error.body.issues as Issue[]);
        setMessage(null);
      }
    },
  });

  const byNode = useMemo(() => issuesByNode(issues), [issues]);

  const rfNodes: CanvasNode[] = useMemo(
    () =>
      (draft?.nodes ?? []).map((n) => ({
        id: n.node_key,
        type: n.node_type,
        position: { x: n.position_x, y: n.position_y },
        selected: n.node_key === selected,
        ariaLabel: `${NODE_LABELS[n.node_type]} node ${n.node_key}`,
        data: { node: n, issues: byNode.get(n.node_key) ?? [], entry: draft?.entry_node_id === n.node_key },
      })),
    [draft, selected, byNode],
  );

  const rfEdges: Edge[] = useMemo(() => {
    const keys = new Set((draft?.nodes ?? []).map((n) => n.node_key));
    return (draft?.nodes ?? []).flatMap((n) =>
      outputsOf(n)
        .filter((o) => o.target && keys.has(o.target))
        .map((o) => ({
          id: `${n.node_key}:${o.handle}`,
          source: n.node_key,
          sourceHandle: o.handle,
          target: o.target as string,
          markerEnd: { type: MarkerType.ArrowClosed },
          ariaLabel: `${n.node_key} ${o.label} to ${o.target}`,
        })),
    );
  }, [draft]);

  const onNodesChange = useCallback(
    (changes: NodeChange<CanvasNode>[]) => {
      for (const c of changes) {
        if (c.type === "select" && c.selected) setSelected(c.id);
        if (c.type === "select" && !c.selected) setSelected((s) => (s === c.id ? null : s));
        if (c.type === "position" && c.position) {
          const { x, y } = c.position;
          change(
            (d) => ({
              ...d,
              nodes: d.nodes.map((n) =>
                n.node_key === c.id ? { ...n, position_x: Math.round(x), position_y: Math.round(y) } : n,
              ),
            }),
            `move:${c.id}:${c.dragging ? "drag" : "end"}`,
          );
        }
        if (c.type === "remove") {
          change((d) => ({
            ...d,
            nodes: removeNode(d.nodes, c.id),
            entry_node_id: d.entry_node_id === c.id ? null : d.entry_node_id,
          }));
          setSelected(null);
        }
      }
    },
    [change],
  );

  const onEdgesChange = useCallback(
    (changes: EdgeChange[]) => {
      for (const c of changes) {
        if (c.type !== "remove") continue;
        const [source, handle] = c.id.split(":");
        change((d) => ({
          ...d,
          nodes: d.nodes.map((n) => {
            if (n.node_key !== source) return n;
            const out = outputsOf(n).find((o) => o.handle === handle);
            return out ? { ...n, config: out.set(n.config, undefined) } : n;
          }),
        }));
      }
    },
    [change],
  );

  // A drawn edge becomes the source's next_node_key (or its button's, row's, branch's).
  const onConnect = useCallback(
    (connection: Connection) => {
      change((d) => ({
        ...d,
        nodes: d.nodes.map((n) => {
          if (n.node_key !== connection.source) return n;
          const outputs = outputsOf(n);
          const out = outputs.find((o) => o.handle === connection.sourceHandle) ?? outputs[0];
          return out ? { ...n, config: out.set(n.config, connection.target) } : n;
        }),
      }));
    },
    [change],
  );

  if (loaded.isPending) return <Spinner label="Loading the flow" />;
  if (loaded.isError || !draft)
    return <FormError error={loaded.error?.message ?? "The flow could not be loaded"} />;

  const selectedNode = draft.nodes.find((n) => n.node_key === selected);
  const keys = draft.nodes.map((n) => n.node_key);
  const generalIssues = issues.filter((i) => !i.node_key || !keys.includes(i.node_key));

  /**
   * Where a new node goes: the free place nearest the middle of what the canvas shows (a node
   * dropped off-screen is a node lost, one dropped on another hides it); when the view has no
   * free place, its middle, stepped aside from any node already there.
   */
  const newNodePosition = (): { x: number; y: number } => {
    const flow = flowInstance.current;
    const rect = canvasRef.current?.getBoundingClientRect();
    if (!flow || !rect) return { x: 80, y: 80 };
    const from = flow.screenToFlowPosition({ x: rect.left, y: rect.top });
    const to = flow.screenToFlowPosition({ x: rect.right, y: rect.bottom });
    const width = NODE_HALF_WIDTH * 2;
    // Room for the new node to grow (its text, its issues once checked).
    const height = NODE_HALF_HEIGHT * 3;
    const middle = { x: (from.x + to.x) / 2 - width / 2, y: (from.y + to.y) / 2 - NODE_HALF_HEIGHT };
    // Sizes as drawn (the canvas's own nodes carry no measurements).
    const boxes = flow.getNodes().map((n) => {
      const measured = flow.getInternalNode(n.id)?.measured;
      return {
        x: n.position.x,
        y: n.position.y,
        width: measured?.width ?? width,
        height: measured?.height ?? NODE_HALF_HEIGHT * 4,
      };
    });
    const GAP = 24;
    const free = (x: number, y: number) =>
      boxes.every(
        (b) =>
          x + width + GAP <= b.x ||
          b.x + b.width + GAP <= x ||
          y + height + GAP <= b.y ||
          b.y + b.height + GAP <= y,
      );
    const inView = (x: number, y: number) =>
      x >= from.x && y >= from.y && x + width <= to.x && y + height <= to.y;
    const STEP = 40;
    const spots: { x: number; y: number }[] = [];
    for (let i = -20; i <= 20; i++)
      for (let j = -20; j <= 20; j++) spots.push({ x: middle.x + i * STEP, y: middle.y + j * STEP });
    const distance = (p: { x: number; y: number }) => Math.hypot(p.x - middle.x, p.y - middle.y);
    const spot = spots
      .sort((a, b) => distance(a) - distance(b))
      .find((p) => inView(p.x, p.y) && free(p.x, p.y));
    if (spot) return { x: Math.round(spot.x), y: Math.round(spot.y) };
    let x = Math.round(middle.x);
    let y = Math.round(middle.y);
    while (draft.nodes.some((n) => Math.abs(n.position_x - x) < 40 && Math.abs(n.position_y - y) < 40)) {
      x += 40;
      y += 40;
    }
    return { x, y };
  };

  const addNode = () => {
    const key = freshKey(addType, draft.nodes);
    const { x, y } = newNodePosition();
    const node: FlowNode = {
      node_key: key,
      node_type: addType,
      config: structuredClone(DEFAULT_CONFIGS[addType]),
      position_x: x,
      position_y: y,
    };
    change((d) => ({
      ...d,
      nodes: [...d.nodes, node],
      entry_node_id: d.entry_node_id ?? (addType === "start" ? key : null),
    }));
    setSelected(key);
  };

  const keywords = Array.isArray(draft.trigger_config.keywords)
    ? (draft.trigger_config.keywords as string[])
    : [];
  const saveError =
    save.error ??
    (activate.error && !(activate.error instanceof HttpError && activate.error.body.issues)
      ? activate.error
      : null);

  return (
    <div className="editor">
      <header className="editor-toolbar">
        <Link href="/flows" className="icon-btn" aria-label="Back to flows">
          <Icon d={ICONS.back} />
        </Link>
        <input
          className="editor-name"
          aria-label="Flow name"
          value={draft.name}
          onChange={(e) => change((d) => ({ ...d, name: e.target.value }), "name")}
        />
        <Badge tone={status === "active" ? "ok" : "neutral"}>{status}</Badge>
        <div className="editor-actions">
          <label className="inline-select">
            <span className="sr-only">Node type to add</span>
            <select
              aria-label="Node type to add"
              value={addType}
              onChange={(e) => setAddType(e.target.value as NodeType)}
            >
              {(Object.keys(NODE_LABELS) as NodeType[]).map((t) => (
                <option key={t} value={t}>
                  {NODE_LABELS[t]}
                </option>
              ))}
            </select>
          </label>
          <button type="button" className="btn btn-small" onClick={addNode}>
            Add node
          </button>
          <button
            type="button"
            className="btn btn-small"
            onClick={undo}
            disabled={!canUndo}
            aria-keyshortcuts="Control+Z"
          >
            Undo
          </button>
          <button
            type="button"
            className="btn btn-small"
            onClick={() => save.mutate()}
            disabled={save.isPending || !dirty}
          >
            {save.isPending ? "Saving…" : dirty ? "Save" : "Saved"}
          </button>
          {status === "active" ? (
            <button type="button" className="btn btn-small" onClick={() => activate.mutate("draft")}>
              Deactivate
            </button>
          ) : (
            <button
              type="button"
              className="btn btn-primary btn-small"
              onClick={() => activate.mutate("active")}
              disabled={activate.isPending}
            >
              Activate
            </button>
          )}
          <Link href={`/flows/${id}/runs`} className="btn btn-small">
            Runs
          </Link>
        </div>
      </header>
      <div className="editor-status" aria-live="polite">
        {message && !dirty ? <span className="form-notice">{message}</span> : null}
        {dirty ? <span className="muted">Unsaved changes</span> : null}
        <FormError error={saveError ? saveError.message : undefined} />
        {issues.some((i) => i.severity === "error") ? (
          <p className="form-error" role="alert">
            The flow cannot be activated: {issues.filter((i) => i.severity === "error").length} issue(s),
            shown on their nodes.
          </p>
        ) : null}
        {generalIssues.length ? (
          <ul className="issue-list">
            {generalIssues.map((i) => (
              <li key={`${i.code}-${i.message}`} className={i.severity}>
                {i.message}
              </li>
            ))}
          </ul>
        ) : null}
      </div>
      <div className="editor-body">
        <section className="canvas" aria-label="Flow canvas" ref={canvasRef}>
          <ReactFlow
            onInit={(instance) => {
              flowInstance.current = instance;
            }}
            nodes={rfNodes}
            edges={rfEdges}
            nodeTypes={nodeTypes}
            onNodesChange={onNodesChange}
            onEdgesChange={onEdgesChange}
            onConnect={onConnect}
            onPaneClick={() => setSelected(null)}
            fitView
            fitViewOptions={{ padding: 0.15, maxZoom: 1.1 }}
            minZoom={0.2}
            deleteKeyCode={["Delete"]}
            proOptions={{ hideAttribution: true }}
          >
            <Background gap={20} />
            <Controls />
          </ReactFlow>
        </section>
        <aside className="editor-side" aria-label="Inspector">
          <nav className="node-index" aria-label="Nodes">
            <label htmlFor="node-picker">Node</label>
            <select
              id="node-picker"
              value={selected ?? ""}
              onChange={(e) => setSelected(e.target.value || null)}
            >
              <option value="">Flow settings</option>
              {draft.nodes.map((n) => (
                <option key={n.node_key} value={n.node_key}>
                  {n.node_key} ({NODE_LABELS[n.node_type]})
                  {byNode.get(n.node_key)?.length ? " (has issues)" : ""}
                </option>
              ))}
            </select>
          </nav>
          {selectedNode ? (
            <Inspector
              key={selectedNode.node_key}
              node={selectedNode}
              keys={keys}
              members={members.data ?? []}
              issues={byNode.get(selectedNode.node_key) ?? []}
              isEntry={draft.entry_node_id === selectedNode.node_key}
              onConfig={(config, coalesce) =>
                change(
                  (d) => ({
                    ...d,
                    nodes: d.nodes.map((n) => (n.node_key === selectedNode.node_key ? { ...n, config } : n)),
                  }),
                  coalesce,
                )
              }
              onRename={(next) => {
                if (!next) return "A node key cannot be empty";
                if (next.length > 100) return "At most 100 characters";
                if (keys.includes(next)) return `${next} is already used by another node`;
                change((d) => ({
                  ...d,
                  nodes: renameNode(d.nodes, selectedNode.node_key, next),
                  entry_node_id: d.entry_node_id === selectedNode.node_key ? next : d.entry_node_id,
                }));
                setSelected(next);
                return null;
              }}
              onMakeEntry={() => change((d) => ({ ...d, entry_node_id: selectedNode.node_key }))}
              onDelete={() => {
                change((d) => ({
                  ...d,
                  nodes: removeNode(d.nodes, selectedNode.node_key),
                  entry_node_id: d.entry_node_id === selectedNode.node_key ? null : d.entry_node_id,
                }));
                setSelected(null);
              }}
            />
          ) : (
            <form className="inspector" aria-label="Flow settings" onSubmit={(e) => e.preventDefault()}>
              <h2>Flow settings</h2>
              <div className="field">
                <label htmlFor="flow-trigger">Trigger</label>
                <select
                  id="flow-trigger"
                  value={draft.trigger_type}
                  onChange={(e) =>
                    change((d) => ({
                      ...d,
                      trigger_type: e.target.value as TriggerType,
                      trigger_config:
                        e.target.value === "keyword"
                          ? d.trigger_config
                          : d.trigger_config.outside_business_hours_only === true
                            ? { outside_business_hours_only: true }
                            : {},
                    }))
                  }
                >
                  <option value="keyword">A keyword in the customer's message</option>
                  <option value="first_inbound_message">The customer's first message</option>
                  <option value="manual">Started by an agent</option>
                </select>
              </div>
              {draft.trigger_type === "keyword" ? (
                <>
                  <div className="field">
                    <label htmlFor="flow-keywords">Keywords (comma separated)</label>
                    <input
                      id="flow-keywords"
                      value={keywords.join(", ")}
                      onChange={(e) =>
                        change(
                          (d) => ({
                            ...d,
                            trigger_config: {
                              ...d.trigger_config,
                              keywords: e.target.value
                                .split(",")
                                .map((k) => k.trimStart())
                                .filter((k, i, all) => k !== "" || i === all.length - 1),
                            },
                          }),
                          "keywords",
                        )
                      }
                    />
                  </div>
                  <div className="field">
                    <label htmlFor="flow-match">Match</label>
                    <select
                      id="flow-match"
                      value={(draft.trigger_config.match_type as string) ?? "contains"}
                      onChange={(e) =>
                        change((d) => ({
                          ...d,
                          trigger_config: { ...d.trigger_config, match_type: e.target.value },
                        }))
                      }
                    >
                      <option value="contains">Message contains the keyword</option>
                      <option value="exact">Message is exactly the keyword</option>
                    </select>
                  </div>
                </>
              ) : null}
              {draft.trigger_type !== "manual" ? (
                <label className="checkbox">
                  <input
                    type="checkbox"
                    checked={draft.trigger_config.outside_business_hours_only === true}
                    onChange={(e) =>
                      change((d) => ({
                        ...d,
                        trigger_config: {
                          ...d.trigger_config,
                          outside_business_hours_only: e.target.checked,
                        },
                      }))
                    }
                  />{" "}
                  Only outside business hours
                </label>
              ) : null}
              <p className="muted">
                Select a node on the canvas or in the list above to edit it. Drag from a node's right edge to
                another node to connect them.
              </p>
            </form>
          )}
        </aside>
      </div>
    </div>
  );
}
