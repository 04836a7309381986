/** The flows feature's calls: flows, their nodes, templates, activation and runs. */
import { api } from "../../lib/api";
import type { Flow, FlowTemplate, FlowWithNodes, Issue, Run, RunEvent } from "../../lib/types";

export const flowKeys = {
  /** Every flow list (lib/live invalidates it on flow events). */
  all: ["flows"] as const,
  templates: ["flow-templates"] as const,
  flow: (id: string) => ["flow", id] as const,
  /** A flow with its nodes, as the editor loaded it. */
  withNodes: (id: string) => ["flow", id, "nodes"] as const,
  runs: (flowId: string) => ["runs", flowId] as const,
  run: (flowId: string, runId: string | undefined) => ["runs", flowId, runId] as const,
};

export const fetchFlows = () => api<{ flows: Flow[] }>("/api/flows?limit=200").then((r) => r.flows);

export const fetchFlowTemplates = () =>
  api<{ templates: FlowTemplate[] }>("/api/flows/templates").then((r) => r.templates);

export const createFlow = (body: { template_slug?: string; name?: string; trigger_type?: string }) =>
  api<{ flow: Flow }>("/api/flows", { body });

export const fetchFlow = (id: string) => api<{ flow: Flow }>(`/api/flows/${id}`).then((r) => r.flow);

export const fetchFlowWithNodes = (id: string) => api<FlowWithNodes>(`/api/flows/${id}`);

export const saveFlow = (id: string, body: unknown) =>
  api<FlowWithNodes>(`/api/flows/${id}`, { method: "PUT", body });

export const setFlowStatus = (id: string, status: Flow["status"]) =>
  api<{ flow: Flow; issues: Issue[] }>(`/api/flows/${id}/activate`, { body: { status } });

export const fetchRuns = (flowId: string) =>
  api<{ runs: Run[] }>(`/api/flows/${flowId}/runs?limit=100`).then((r) => r.runs);

export const fetchRun = (flowId: string, runId: string) =>
  api<{ run: Run; events: RunEvent[] }>(`/api/flows/${flowId}/runs/${runId}`);
