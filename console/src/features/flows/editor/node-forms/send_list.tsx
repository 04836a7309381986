import { LIMITS } from "../../../../../../src/flows/node-types/index.js";
import { arr, HeaderFooter, NextSelect, type NodeForm, type Rec, s, TextInput } from "./fields";

export const send_list: NodeForm = {
  Fields: ({ config: c, set, others, onConfig }) => {
    const sections = arr(c.sections);
    const setSections = (x: Rec[]) => onConfig({ ...c, sections: x }, "sections");
    const setRows = (si: number, rows: (rows: Rec[]) => Rec[]) =>
      setSections(sections.map((sec, i) => (i === si ? { ...sec, rows: rows(arr(sec.rows)) } : sec)));
    const setRow = (si: number, ri: number, patch: Rec) =>
      setRows(si, (rows) => rows.map((r, j) => (j === ri ? { ...r, ...patch } : r)));
    return (
      <>
        <TextInput
          label="Message text"
          value={c.text}
          onChange={set("text")}
          multiline
          max={LIMITS.bodyText}
        />
        <TextInput
          label="Button label"
          value={c.button_label}
          onChange={set("button_label")}
          max={LIMITS.listButtonLabel}
        />
        <HeaderFooter config={c} set={set} />
        {sections.map((sec, si) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: sections have no identity but their place
          <fieldset key={si} className="sub-items">
            <legend>Section {si + 1}</legend>
            <TextInput
              label={`Section ${si + 1} title`}
              value={sec.title}
              max={LIMITS.listSectionTitle}
              onChange={(v) => setSections(sections.map((x, i) => (i === si ? { ...x, title: v } : x)))}
            />
            {arr(sec.rows).map((r, ri) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: rows have no identity but their place
              <div key={ri} className="sub-item">
                <TextInput
                  label={`Row ${ri + 1} title`}
                  value={r.title}
                  max={LIMITS.listRowTitle}
                  onChange={(v) => setRow(si, ri, { title: v })}
                />
                <TextInput
                  label={`Row ${ri + 1} description`}
                  value={r.description}
                  max={LIMITS.listRowDescription}
                  onChange={(v) => setRow(si, ri, { description: v })}
                />
                <TextInput
                  label={`Row ${ri + 1} reply id`}
                  value={r.reply_id}
                  onChange={(v) => setRow(si, ri, { reply_id: v })}
                />
                <NextSelect
                  label={`Row ${ri + 1} next`}
                  value={r.next_node_key}
                  keys={others}
                  onChange={(v) => setRow(si, ri, { next_node_key: v })}
                />
                <button
                  type="button"
                  className="btn btn-ghost btn-small"
                  aria-label={`Remove row ${ri + 1}`}
                  onClick={() => setRows(si, (rows) => rows.filter((_, j) => j !== ri))}
                >
                  Remove
                </button>
              </div>
            ))}
            <button
              type="button"
              className="btn btn-small"
              onClick={() =>
                setRows(si, (rows) => [
                  ...rows,
                  { reply_id: `row_${rows.length + 1}`, title: `Row ${rows.length + 1}`, next_node_key: "" },
                ])
              }
            >
              Add row
            </button>
          </fieldset>
        ))}
      </>
    );
  },
  summary: (c) => s(c.text),
};
