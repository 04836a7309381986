import { MEDIA_TYPES } from "../../../../../../src/flows/node-types/send_media.js";
import { Next, type NodeForm, Select, s, TextInput } from "./fields";

export const send_media: NodeForm = {
  Fields: (props) => {
    const { config: c, set } = props;
    return (
      <>
        <Select label="Media type" value={c.media_type} options={MEDIA_TYPES} onChange={set("media_type")} />
        <TextInput
          label="Media URL"
          value={c.media_url}
          onChange={set("media_url")}
          placeholder="https://…"
        />
        <TextInput label="Caption" value={c.caption} onChange={set("caption")} multiline max={1024} />
        <TextInput label="File name" value={c.filename} onChange={set("filename")} />
        <Next {...props} />
      </>
    );
  },
  summary: (c) => `${s(c.media_type)} ${s(c.media_url)}`.trim(),
};
