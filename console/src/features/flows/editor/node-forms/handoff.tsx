import { type NodeForm, Select, s, TextInput } from "./fields";

export const handoff: NodeForm = {
  Fields: ({ config: c, set, members }) => (
    <>
      <TextInput label="Note for the agent" value={c.note} onChange={set("note")} multiline />
      <Select
        label="Assign to"
        value={c.assign_to ?? ""}
        options={[
          ["", "Nobody in particular"],
          ...members.map((m) => [m.user_id, m.name] as [string, string]),
        ]}
        onChange={set("assign_to")}
      />
    </>
  ),
  summary: (c) => s(c.note) || "Pass the conversation to an agent",
};
