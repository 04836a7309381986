import { Next, type NodeForm, Select, s, TextInput } from "./fields";

export const set_tag: NodeForm = {
  Fields: (props) => (
    <>
      <Select
        label="Mode"
        value={props.config.mode}
        options={[
          ["add", "Add tag"],
          ["remove", "Remove tag"],
        ]}
        onChange={props.set("mode")}
      />
      <TextInput label="Tag" value={props.config.tag} onChange={props.set("tag")} />
      <Next {...props} />
    </>
  ),
  summary: (c) => `${c.mode === "remove" ? "Remove" : "Add"} tag ${s(c.tag)}`,
};
