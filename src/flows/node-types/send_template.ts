import {
  bodyParameterNames,
  bodyParameterTexts,
  renderTemplateBody,
  templateKey,
  templateProblem,
} from "../../templates/placeholders.js";
import type { TemplateComponentParameters } from "../../upstream/messages.js";
import { fieldEdge, isObject, items, nonBlank, optionalKey, problem, requireText } from "./checks.js";
import { defineNodeType } from "./types.js";

/** A WhatsApp template, the only message that may go out after the 24-hour window. */
export interface SendTemplateConfig {
  template_name: string;
  language: string;
  /** As Meta takes them: `[{ type: "body", parameters: [{ type: "text", text: "{{vars.name}}" }] }]`. */
  components?: Array<{
    type: string;
    sub_type?: string;
    index?: string | number;
    parameters: Array<Record<string, unknown>>;
  }>;
  next_node_key?: string;
}

/** Sends an approved template (also outside the 24-hour window), then goes on to next_node_key. */
export const send_template = defineNodeType<SendTemplateConfig>()({
  type: "send_template",
  label: "Template",
  defaultConfig: { template_name: "", language: "en_US" },
  edges: (c) => [fieldEdge(c, "next_node_key", "next")],
  usesTemplates: true,
  validate: (c, report, { templates }) => {
    requireText(c, "template_name", 512, report);
    requireText(c, "language", 20, report);
    const components = c.components;
    if (components !== undefined && components !== null) {
      if (!Array.isArray(components)) report("invalid_value", "components must be an array");
      else {
        components.forEach((component, i) => {
          if (!isObject(component) || !nonBlank(component.type) || !Array.isArray(component.parameters)) {
            report("invalid_value", `components[${i}] needs a type and a parameters array`);
          }
        });
      }
    }
    optionalKey(c, "next_node_key", report);
    if (templates && nonBlank(c.template_name)) {
      // Against the account's synced templates: approved, and given the parameters it needs.
      const language = nonBlank(c.language) ? c.language : "";
      const unusable = templateProblem(templates.get(templateKey(c.template_name, language)), {
        name: c.template_name,
        language,
        components: c.components,
      });
      if (unusable) report("template_unusable", unusable);
    }
  },
  texts: (c) =>
    items(c.components).flatMap((component) =>
      isObject(component)
        ? items(component.parameters).flatMap((p) =>
            isObject(p) && typeof p.text === "string" ? [p.text] : [],
          )
        : [],
    ),
  /**
   * `template`: the stored template's components, so that the inbox text is
   * the body as the customer reads it (else the template's name stands in).
   */
  build: (c, render, template) => {
    if (!nonBlank(c.template_name)) return problem("config.template_name must be a non-empty string");
    if (!nonBlank(c.language)) return problem("config.language must be a non-empty string");
    const raw = c.components ?? [];
    if (!Array.isArray(raw)) return problem("config.components must be an array");
    const components: TemplateComponentParameters[] = [];
    for (const component of raw) {
      if (!isObject(component) || !nonBlank(component.type) || !Array.isArray(component.parameters)) {
        return problem("every component needs a type and a parameters array");
      }
      components.push({
        type: component.type,
        ...(nonBlank(component.sub_type) ? { sub_type: component.sub_type } : {}),
        ...(component.index === undefined || component.index === null
          ? {}
          : { index: String(component.index) }),
        // Parameter texts take {{vars.x}} and {{contact.name}} like every other text.
        parameters: component.parameters.map((p) =>
          isObject(p) && typeof p.text === "string" ? { ...p, text: render(p.text) } : p,
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
            name: c.template_name,
            language: { code: c.language },
            ...(components.length ? { components } : {}),
          },
        },
        text: shown ?? `Template ${c.template_name} (${c.language})`,
      },
    };
  },
  afterSend: (c) => c.next_node_key,
  enter: async (_c, run) => {
    await run.send();
    return undefined;
  },
});
