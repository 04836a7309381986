import { nodeModule } from "../node-types/index.js";
import type { Built } from "../node-types/types.js";
import { type ContactFacts, renderText } from "./rules.js";

export type { Built, BuiltMessage } from "../node-types/types.js";

/**
 * Builds the WhatsApp message a sending node puts out, with its texts filled
 * in (each type's `build`, node-types/). Configs of an active flow can still
 * be edited into any shape (PUT only checks shapes), so every field is checked
 * there: a problem comes back as a message naming the field, and the run ends
 * `failed` with it.
 *
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
  const build = nodeModule(nodeType)?.build;
  if (!build) return { ok: false, problem: `${nodeType} nodes send nothing` };
  return build(config, (text) => renderText(text, vars, contact), template);
}

/** The reply_id -> next_node_key choices a waiting buttons or list node offers. */
export function replyChoices(nodeType: string, config: Record<string, unknown>): Map<string, unknown> {
  return nodeModule(nodeType)?.choices?.(config) ?? new Map();
}
