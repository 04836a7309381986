import { Next, type NodeForm, s, TextInput } from "./fields";

export const send_message: NodeForm = {
  Fields: (props) => (
    <>
      <TextInput
        label="Message text"
        value={props.config.text}
        onChange={props.set("text")}
        multiline
        max={1024}
        placeholder="Hello {{contact.name}}!"
      />
      <Next {...props} />
    </>
  ),
  summary: (c) => s(c.text),
};
