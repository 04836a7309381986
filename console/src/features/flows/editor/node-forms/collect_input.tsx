import { INPUT_VALIDATIONS } from "../../../../../../src/flows/node-types/collect_input.js";
import { Next, type NodeForm, Select, s, TextInput } from "./fields";

export const collect_input: NodeForm = {
  Fields: (props) => {
    const { config: c, set } = props;
    return (
      <>
        <TextInput
          label="Question"
          value={c.prompt_text}
          onChange={set("prompt_text")}
          multiline
          max={1024}
        />
        <TextInput label="Store answer as variable" value={c.var_key} onChange={set("var_key")} />
        <Select
          label="Validation"
          value={c.validation ?? "text"}
          options={INPUT_VALIDATIONS}
          onChange={set("validation")}
        />
        {c.validation === "regex" ? (
          <TextInput label="Regular expression" value={c.regex} onChange={set("regex")} />
        ) : null}
        <Next {...props} />
      </>
    );
  },
  summary: (c) => `${s(c.prompt_text)}${c.var_key ? ` → {{vars.${s(c.var_key)}}}` : ""}`,
};
