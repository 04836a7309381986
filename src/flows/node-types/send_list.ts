import type { InteractiveBody } from "../../upstream/messages.js";
import {
  checkReplyIds,
  footer,
  header,
  isObject,
  items,
  LIMITS,
  nonBlank,
  objects,
  optionalFilled,
  optionalText,
  optionChoices,
  problem,
  requireKey,
  requireText,
  stringFields,
  tapAnswer,
} from "./checks.js";
import type { Config } from "./types.js";
import { defineNodeType } from "./types.js";

export interface ListRow {
  reply_id: string;
  title: string;
  description?: string;
  next_node_key: string;
}

export interface ListSection {
  title?: string;
  rows: ListRow[];
}

export interface SendListConfig {
  text: string;
  button_label: string;
  header_text?: string;
  footer_text?: string;
  sections: ListSection[];
}

const rowsOf = (config: Config) => items(config.sections).flatMap((s) => (isObject(s) ? items(s.rows) : []));

/** Asks with a list of up to 10 rows in sections and waits; each row leads to its own node. */
export const send_list = defineNodeType<SendListConfig>()({
  type: "send_list",
  label: "List",
  defaultConfig: {
    text: "",
    button_label: "Choose",
    sections: [{ title: "", rows: [{ reply_id: "row_1", title: "Row 1", next_node_key: "" }] }],
  },
  edges: (c) =>
    objects(c.sections).flatMap((s, si) =>
      objects(s.rows).map((r, ri) => ({
        handle: `row-${si}-${ri}`,
        label: nonBlank(r.title) ? r.title : `Row ${ri + 1}`,
        target: typeof r.next_node_key === "string" && r.next_node_key !== "" ? r.next_node_key : undefined,
        set: (config: Config, target: string | undefined) => ({
          ...config,
          sections: items(config.sections).map((xs, sj) =>
            sj === si && isObject(xs)
              ? {
                  ...xs,
                  rows: items(xs.rows).map((xr, rj) =>
                    rj === ri && isObject(xr) ? { ...xr, next_node_key: target ?? "" } : xr,
                  ),
                }
              : xs,
          ),
        }),
      })),
    ),
  validate: (c, report) => {
    requireText(c, "text", LIMITS.bodyText, report);
    requireText(c, "button_label", LIMITS.listButtonLabel, report);
    optionalText(c, "header_text", LIMITS.headerText, report);
    optionalText(c, "footer_text", LIMITS.footerText, report);
    if (!Array.isArray(c.sections) || c.sections.length === 0) {
      return report("missing_field", "sections is required");
    }
    const sections = objects(c.sections);
    const rows: Config[] = [];
    for (const [s, section] of sections.entries()) {
      if (sections.length > 1) {
        requireText(section, "title", LIMITS.listSectionTitle, report, `sections[${s}].title`);
      } else {
        optionalText(section, "title", LIMITS.listSectionTitle, report, `sections[${s}].title`);
      }
      if (!Array.isArray(section.rows) || section.rows.length === 0) {
        report("missing_field", `sections[${s}].rows needs at least one row`);
        continue;
      }
      for (const [r, row] of objects(section.rows).entries()) {
        const label = `sections[${s}].rows[${r}]`;
        requireText(row, "title", LIMITS.listRowTitle, report, `${label}.title`);
        optionalText(row, "description", LIMITS.listRowDescription, report, `${label}.description`);
        requireKey(row, "next_node_key", report, `${label}.next_node_key`);
        rows.push(row);
      }
    }
    if (rows.length > LIMITS.listRowsMax) {
      report("list_row_count", `has ${rows.length} rows; a list holds at most ${LIMITS.listRowsMax} in all`);
    }
    checkReplyIds(rows, "rows", report);
  },
  texts: (c) => stringFields(c, ["text", "header_text", "footer_text"]),
  build: (c, render) => {
    if (!nonBlank(c.text)) return problem("config.text must be a non-empty string");
    if (!nonBlank(c.button_label)) return problem("config.button_label must be a non-empty string");
    const sections = items(c.sections);
    const valid = sections.every(
      (s) =>
        isObject(s) &&
        Array.isArray(s.rows) &&
        s.rows.length > 0 &&
        s.rows.every((r) => isObject(r) && nonBlank(r.reply_id) && nonBlank(r.title)),
    );
    if (sections.length === 0 || !valid)
      return problem("config.sections must hold rows with a reply_id and a title");
    const body = render(c.text);
    const interactive: InteractiveBody = {
      type: "list",
      ...header(optionalFilled(c.header_text, render)),
      body: { text: body },
      ...footer(optionalFilled(c.footer_text, render)),
      action: {
        button: c.button_label,
        sections: (sections as Config[]).map((s) => ({
          ...(nonBlank(s.title) ? { title: s.title } : {}),
          rows: (s.rows as Config[]).map((r) => ({
            id: r.reply_id as string,
            title: r.title as string,
            ...(nonBlank(r.description) ? { description: r.description } : {}),
          })),
        })),
      },
    };
    return { ok: true, message: { outbound: { type: "interactive", interactive }, text: body } };
  },
  choices: (c) => optionChoices(rowsOf(c)),
  answer: (c, message) => tapAnswer(optionChoices(rowsOf(c)), message.interactive),
  enter: async (_c, run) => {
    await run.ask();
    return undefined;
  },
});
