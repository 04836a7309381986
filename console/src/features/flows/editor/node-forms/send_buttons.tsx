import { LIMITS } from "../../../../../../src/flows/node-types/index.js";
import { arr, HeaderFooter, NextSelect, type NodeForm, type Rec, s, TextInput } from "./fields";

export const send_buttons: NodeForm = {
  Fields: ({ config: c, set, others, onConfig }) => {
    const buttons = arr(c.buttons);
    const setButtons = (b: Rec[]) => onConfig({ ...c, buttons: b }, "buttons");
    return (
      <>
        <TextInput
          label="Message text"
          value={c.text}
          onChange={set("text")}
          multiline
          max={LIMITS.bodyText}
        />
        <HeaderFooter config={c} set={set} />
        <fieldset className="sub-items">
          <legend>
            Buttons ({LIMITS.buttonsMin} to {LIMITS.buttonsMax})
          </legend>
          {buttons.map((b, i) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: buttons have no identity but their place
            <div key={i} className="sub-item">
              <TextInput
                label={`Button ${i + 1} title`}
                value={b.title}
                max={LIMITS.buttonTitle}
                onChange={(v) => setButtons(buttons.map((x, j) => (j === i ? { ...x, title: v } : x)))}
              />
              <TextInput
                label={`Button ${i + 1} reply id`}
                value={b.reply_id}
                onChange={(v) => setButtons(buttons.map((x, j) => (j === i ? { ...x, reply_id: v } : x)))}
              />
              <NextSelect
                label={`Button ${i + 1} next`}
                value={b.next_node_key}
                keys={others}
                onChange={(v) =>
                  setButtons(buttons.map((x, j) => (j === i ? { ...x, next_node_key: v } : x)))
                }
              />
              <button
                type="button"
                className="btn btn-ghost btn-small"
                onClick={() => setButtons(buttons.filter((_, j) => j !== i))}
                aria-label={`Remove button ${i + 1}`}
              >
                Remove
              </button>
            </div>
          ))}
          {buttons.length < LIMITS.buttonsMax ? (
            <button
              type="button"
              className="btn btn-small"
              onClick={() =>
                setButtons([
                  ...buttons,
                  {
                    reply_id: `option_${buttons.length + 1}`,
                    title: `Option ${buttons.length + 1}`,
                    next_node_key: "",
                  },
                ])
              }
            >
              Add button
            </button>
          ) : null}
        </fieldset>
      </>
    );
  },
  summary: (c) => s(c.text),
};
