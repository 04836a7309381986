import type { NodeType } from "../../../../lib/types";
import { business_hours } from "./business_hours";
import { collect_input } from "./collect_input";
import { condition } from "./condition";
import { end } from "./end";
import type { NodeForm } from "./fields";
import { handoff } from "./handoff";
import { send_buttons } from "./send_buttons";
import { send_list } from "./send_list";
import { send_media } from "./send_media";
import { send_message } from "./send_message";
import { send_template } from "./send_template";
import { set_tag } from "./set_tag";
import { start } from "./start";
import { wait } from "./wait";

/**
 * The editor's side of each node type (its inspector form and card summary), registered in one map
 * keyed like the service's registry (src/flows/node-types/index.ts), which gives the labels, edges and
 * default configs. A type missing here does not compile.
 */
export const NODE_FORMS: { [K in NodeType]: NodeForm } = {
  start,
  send_message,
  send_buttons,
  send_list,
  send_media,
  send_template,
  collect_input,
  condition,
  set_tag,
  handoff,
  wait,
  business_hours,
  end,
};

export type { NodeForm, NodeFormProps } from "./fields";
