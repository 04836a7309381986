import type { NodeForm } from "./fields";

export const end: NodeForm = {
  Fields: () => <p className="muted">This node has no settings.</p>,
  summary: () => "The run completes",
};
