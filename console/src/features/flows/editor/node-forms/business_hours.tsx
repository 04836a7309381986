import { NextSelect, type NodeForm } from "./fields";

export const business_hours: NodeForm = {
  Fields: ({ config: c, set, others }) => (
    <>
      <p className="hint">
        Set the hours in Settings → Automation; without them the business is always open.
      </p>
      <NextSelect label="When open" value={c.open_node_key} keys={others} onChange={set("open_node_key")} />
      <NextSelect
        label="When closed"
        value={c.closed_node_key}
        keys={others}
        onChange={set("closed_node_key")}
      />
    </>
  ),
  summary: () => "Open or closed, by the account's business hours",
};
