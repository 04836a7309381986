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
import { defineNodeType } from "./types.js";

export interface ReplyButton {
  reply_id: string;
  title: string;
  next_node_key: string;
}

export interface SendButtonsConfig {
  text: string;
  header_text?: string;
  footer_text?: string;
  buttons: ReplyButton[];
}

/** Asks with 1 to 3 reply buttons and waits; each button leads to its own node. */
export const send_buttons = defineNodeType<SendButtonsConfig>()({
  type: "send_buttons",
  label: "Buttons",
  defaultConfig: { text: "", buttons: [{ reply_id: "option_1", title: "Option 1", next_node_key: "" }] },
  edges: (c) =>
    objects(c.buttons).map((b, i) => ({
      handle: `button-${i}`,
      label: nonBlank(b.title) ? b.title : `Button ${i + 1}`,
      target: typeof b.next_node_key === "string" && b.next_node_key !== "" ? b.next_node_key : undefined,
      set: (config, target) => ({
        ...config,
        buttons: items(config.buttons).map((x, j) =>
          j === i && isObject(x) ? { ...x, next_node_key: target ?? "" } : x,
        ),
      }),
    })),
  validate: (c, report) => {
    requireText(c, "text", LIMITS.bodyText, report);
    optionalText(c, "header_text", LIMITS.headerText, report);
    optionalText(c, "footer_text", LIMITS.footerText, report);
    if (!Array.isArray(c.buttons)) return report("missing_field", "buttons is required");
    const count = c.buttons.length;
    if (count < LIMITS.buttonsMin || count > LIMITS.buttonsMax) {
      report("button_count", `has ${count} buttons; it needs ${LIMITS.buttonsMin} to ${LIMITS.buttonsMax}`);
    }
    const buttons = objects(c.buttons);
    buttons.forEach((button, i) => {
      requireText(button, "title", LIMITS.buttonTitle, report, `buttons[${i}].title`);
      requireKey(button, "next_node_key", report, `buttons[${i}].next_node_key`);
    });
    checkReplyIds(buttons, "buttons", report);
  },
  texts: (c) => stringFields(c, ["text", "header_text", "footer_text"]),
  build: (c, render) => {
    if (!nonBlank(c.text)) return problem("config.text must be a non-empty string");
    const buttons = items(c.buttons);
    if (buttons.length === 0) return problem("config.buttons must hold at least one button");
    if (!buttons.every((b) => isObject(b) && nonBlank(b.reply_id) && nonBlank(b.title))) {
      return problem("every button needs a reply_id and a title");
    }
    const body = render(c.text);
    const interactive: InteractiveBody = {
      type: "button",
      ...header(optionalFilled(c.header_text, render)),
      body: { text: body },
      ...footer(optionalFilled(c.footer_text, render)),
      action: {
        buttons: (buttons as Array<{ reply_id: string; title: string }>).map((b) => ({
          type: "reply" as const,
          reply: { id: b.reply_id, title: b.title },
        })),
      },
    };
    return { ok: true, message: { outbound: { type: "interactive", interactive }, text: body } };
  },
  choices: (c) => optionChoices(items(c.buttons)),
  answer: (c, message) => tapAnswer(optionChoices(items(c.buttons)), message.interactive),
  enter: async (_c, run) => {
    await run.ask();
    return undefined;
  },
});
