import { bodyParameterNames, bodyParameterTexts, renderTemplateBody } from "../../templates/placeholders.js";
import type { InteractiveBody, OutboundMessage, TemplateComponentParameters } from "../../upstream/graph.js";
import { type ContactFacts, renderText } from "./rules.js";

/**
 * Builds the WhatsApp message a sending node puts out, with its texts filled
 * in. Configs of an active flow can still be edited into any shape (PUT only
 * checks shapes), so every field is checked here: a problem comes back as a
 * message naming the field, and the run ends `failed` with it.
 */

export interface BuiltMessage {
  outbound: OutboundMessage;
  /** What the inbox shows as the message's text. */
  text: string;
}

export type Built = { ok: true; message: BuiltMessage } | { ok: false; problem: string };

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value);
const nonEmpty = (value: unknown): value is string => typeof value === "string" && value.trim() !== "";

/**
 * `template`, for send_template nodes: the stored template's components, so
 * that the inbox text is the body as the customer reads it (else the
 * template's name stands in).
 */
export function buildNodeMessage(
  nodeType: string,
  config: Record<string, unknown>,
  vars: Record<string, unknown>,
  contact: ContactFacts,
  template?: { components: Array<Record<string, unknown>> },
): Built {
  const fill = (value: string) => renderText(value, vars, contact);
  const optional = (value: unknown) => (nonEmpty(value) ? fill(value) : undefined);
  const fail = (problem: string): Built => ({ ok: false, problem });
  const text = (body: string): Built => ({
    ok: true,
    message: { outbound: { type: "text", text: { body } }, text: body },
  });

  switch (nodeType) {
    case "send_message": {
      if (!nonEmpty(config.text)) return fail("config.text must be a non-empty string");
      return text(fill(config.text));
    }
    case "collect_input": {
      if (!nonEmpty(config.prompt_text)) return fail("config.prompt_text must be a non-empty string");
      return text(fill(config.prompt_text));
    }
    case "send_buttons": {
      if (!nonEmpty(config.text)) return fail("config.text must be a non-empty string");
      const buttons = Array.isArray(config.buttons) ? config.buttons : [];
      if (buttons.length === 0) return fail("config.buttons must hold at least one button");
      if (!buttons.every((b) => isObject(b) && nonEmpty(b.reply_id) && nonEmpty(b.title))) {
        return fail("every button needs a reply_id and a title");
      }
      const body = fill(config.text);
      const interactive: InteractiveBody = {
        type: "button",
        ...header(optional(config.header_text)),
        body: { text: body },
        ...footer(optional(config.footer_text)),
        action: {
          buttons: (buttons as Array<{ reply_id: string; title: string }>).map((b) => ({
            type: "reply" as const,
            reply: { id: b.reply_id, title: b.title },
          })),
        },
      };
      return { ok: true, message: { outbound: { type: "interactive", interactive }, text: body } };
    }
    case "send_list": {
      if (!nonEmpty(config.text)) return fail("config.text must be a non-empty string");
      if (!nonEmpty(config.button_label)) return fail("config.button_label must be a non-empty string");
      const sections = Array.isArray(config.sections) ? config.sections : [];
      const valid = sections.every(
        (s) =>
          isObject(s) &&
          Array.isArray(s.rows) &&
          s.rows.length > 0 &&
          s.rows.every((r) => isObject(r) && nonEmpty(r.reply_id) && nonEmpty(r.title)),
      );
      if (sections.length === 0 || !valid)
        return fail("config.sections must hold rows with a reply_id and a title");
      const body = fill(config.text);
      const interactive: InteractiveBody = {
        type: "list",
        ...header(optional(config.header_text)),
        body: { text: body },
        ...footer(optional(config.footer_text)),
        action: {
          button: config.button_label,
          sections: (sections as Array<Record<string, unknown>>).map((s) => ({
            ...(nonEmpty(s.title) ? { title: s.title } : {}),
            rows: (s.rows as Array<Record<string, unknown>>).map((r) => ({
              id: r.reply_id as string,
              title: r.title as string,
              ...(nonEmpty(r.description) ? { description: r.description } : {}),
            })),
          })),
        },
      };
      return { ok: true, message: { outbound: { type: "interactive", interactive }, text: body } };
    }
    case "send_media": {
      if (!nonEmpty(config.media_url)) return fail("config.media_url must be a non-empty string");
      const caption = optional(config.caption);
      const link = { link: config.media_url, ...(caption === undefined ? {} : { caption }) };
      switch (config.media_type) {
        case "image":
          return { ok: true, message: { outbound: { type: "image", image: link }, text: caption ?? "" } };
        case "video":
          return { ok: true, message: { outbound: { type: "video", video: link }, text: caption ?? "" } };
        case "document": {
          const filename = optional(config.filename);
          return {
            ok: true,
            message: {
              outbound: { type: "document", document: { ...link, ...(filename ? { filename } : {}) } },
              text: caption ?? "",
            },
          };
        }
        default:
          return fail("config.media_type must be image, video or document");
      }
    }
    case "send_template": {
      if (!nonEmpty(config.template_name)) return fail("config.template_name must be a non-empty string");
      if (!nonEmpty(config.language)) return fail("config.language must be a non-empty string");
      const raw = config.components ?? [];
      if (!Array.isArray(raw)) return fail("config.components must be an array");
      const components: TemplateComponentParameters[] = [];
      for (const c of raw) {
        if (!isObject(c) || !nonEmpty(c.type) || !Array.isArray(c.parameters)) {
          return fail("every component needs a type and a parameters array");
        }
        components.push({
          type: c.type,
          ...(nonEmpty(c.sub_type) ? { sub_type: c.sub_type } : {}),
          ...(c.index === undefined || c.index === null ? {} : { index: String(c.index) }),
          // Parameter texts take {{vars.x}} and {{contact.name}} like every other text.
          parameters: c.parameters.map((p) =>
            isObject(p) && typeof p.text === "string" ? { ...p, text: fill(p.text) } : p,
          ) as Array<Record<string, unknown>>,
        });
      }
      const shown = template
        ? renderTemplateBody(
            template.components,
            bodyParameterTexts(components),
            bodyParameterNames(components),
          )
        : null;
      return {
        ok: true,
        message: {
          outbound: {
            type: "template",
            template: {
              name: config.template_name,
              language: { code: config.language },
              ...(components.length ? { components } : {}),
            },
          },
          text: shown ?? `Template ${config.template_name} (${config.language})`,
        },
      };
    }
    default:
      return fail(`${nodeType} nodes send nothing`);
  }
}

const header = (text: string | undefined) => (text ? { header: { type: "text" as const, text } } : {});
const footer = (text: string | undefined) => (text ? { footer: { text } } : {});

/** The reply_id -> next_node_key choices a waiting buttons or list node offers. */
export function replyChoices(nodeType: string, config: Record<string, unknown>): Map<string, unknown> {
  const choices = new Map<string, unknown>();
  const add = (option: unknown) => {
    if (isObject(option) && typeof option.reply_id === "string" && !choices.has(option.reply_id)) {
      choices.set(option.reply_id, option.next_node_key);
    }
  };
  if (nodeType === "send_buttons" && Array.isArray(config.buttons)) config.buttons.forEach(add);
  if (nodeType === "send_list" && Array.isArray(config.sections)) {
    for (const section of config.sections) {
      if (isObject(section) && Array.isArray(section.rows)) section.rows.forEach(add);
    }
  }
  return choices;
}
