import { Next, type NodeForm } from "./fields";

export const start: NodeForm = {
  Fields: Next,
  summary: () => "Where the flow begins",
};
