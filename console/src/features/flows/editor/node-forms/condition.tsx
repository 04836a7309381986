import { CONDITION_OPERATORS } from "../../../../../../src/flows/node-types/condition.js";
import { NextSelect, type NodeForm, Select, s, TextInput } from "./fields";

export const condition: NodeForm = {
  Fields: ({ config: c, set, others }) => (
    <>
      <Select
        label="Subject"
        value={c.subject}
        options={[
          ["var", "Variable"],
          ["contact_field", "Contact field"],
          ["tag", "Tag"],
        ]}
        onChange={set("subject")}
      />
      <TextInput label="Subject key" value={c.subject_key} onChange={set("subject_key")} />
      <Select label="Operator" value={c.operator} options={CONDITION_OPERATORS} onChange={set("operator")} />
      {c.operator === "present" || c.operator === "absent" ? null : (
        <TextInput label="Value" value={c.value} onChange={set("value")} />
      )}
      <NextSelect label="When true" value={c.true_next} keys={others} onChange={set("true_next")} />
      <NextSelect label="When false" value={c.false_next} keys={others} onChange={set("false_next")} />
    </>
  ),
  summary: (c) => `${s(c.subject)} ${s(c.subject_key)} ${s(c.operator)} ${s(c.value)}`.trim(),
};
