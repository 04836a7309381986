import type { StoredTemplate } from "../../templates/placeholders.js";
import type { OutboundMessage } from "../../upstream/messages.js";
import type { ContactFacts } from "../runner/rules.js";

/**
 * What a node type is, in one module per type (`<type>.ts`, registered in
 * index.ts): its config, its checks, its edges, what it sends and how a run
 * moves through it. These modules import nothing that needs Node.js: the
 * console imports them for the labels, edges and default configs it shows
 * (test/flows/node-types.test.ts bundles them for the browser).
 */

export type Config = Record<string, unknown>;

/** One outgoing connection of a node: the config field it lives in, as the editor draws it. */
export interface Edge {
  /** Stable name of the connection point (`next_node_key`, `button-0`, `row-1-2` …). */
  handle: string;
  label: string;
  /** The node_key it leads to; undefined when not connected. */
  target: string | undefined;
  /** The config with this edge pointed at target (or cleared). */
  set: (config: Config, target: string | undefined) => Config;
}

export type IssueCode =
  | "no_entry_node"
  | "entry_node_missing"
  | "duplicate_node_key"
  | "unknown_node_type"
  | "missing_target"
  | "missing_field"
  | "invalid_value"
  | "text_too_long"
  | "button_count"
  | "duplicate_reply_id"
  | "list_row_count"
  | "no_keywords"
  | "invalid_trigger_config"
  | "invalid_fallback_policy"
  | "unreachable_node"
  | "unknown_placeholder"
  | "template_unusable";

export type Report = (code: IssueCode, message: string) => void;

export interface ValidationContext {
  /** The account's synced templates by templateKey(name, language), when the caller has them. */
  templates?: Map<string, StoredTemplate>;
}

export interface BuiltMessage {
  outbound: OutboundMessage;
  /** What the inbox shows as the message's text. */
  text: string;
}

export type Built = { ok: true; message: BuiltMessage } | { ok: false; problem: string };

/** The customer message a waiting node is offered (what it reads of it). */
export interface AnswerInput {
  type: string;
  text: string | null;
  interactive: Record<string, unknown> | null;
}

/** An accepted answer: where the run goes, what its reply_received event says, vars it sets. */
export type Answer = { next: unknown; payload: Record<string, unknown>; vars?: Record<string, unknown> };

/**
 * What the runner lends a node it enters (flows/runner/engine.ts implements it
 * on the run's transaction). Each call records the run's events and changes.
 */
export interface NodeRuntime {
  readonly key: string;
  readonly vars: Record<string, unknown>;
  readonly contact: ContactFacts;
  /** Fills {{vars.x}}, {{contact.name}} and {{contact.phone}}. */
  render(text: string): string;
  /** Ends the run `failed` (reason invalid_node) with this message. */
  invalid(message: string): void;
  /** Ends the run `completed` with this reason. */
  complete(reason: string): void;
  /** Queues the node's message (its `build`); the walk goes on once it is sent (`afterSend`). */
  send(): Promise<void>;
  /** Queues the node's question; the run then waits for an answer (`answer`). */
  ask(): Promise<void>;
  /** Puts the run to sleep for this many minutes; it then goes on from `resume`. */
  sleep(minutes: number): Promise<void>;
  /** Whether the account is inside its business hours now (always, without hours). */
  isOpen(): Promise<boolean>;
  setTag(mode: "add" | "remove", tag: string): Promise<void>;
  /** Ends the run `handed_off` and queues the conversation for the agents. */
  handOff(input: { note: string | null; assignTo: unknown }): Promise<void>;
}

/** Where a walk goes after entering a node: the next node_key, or undefined when the run stops there. */
export type Step = { next: unknown } | undefined;

export interface NodeTypeModule<T extends string = string, C = Config> {
  type: T;
  /** What the editor calls it. */
  label: string;
  /** Where a flow begins: nothing leads into it, and the editor takes it as the entry by default. */
  begins?: boolean;
  /** The config a node of this type starts with in the editor. */
  defaultConfig: Config;
  /** The node's outgoing connections, in config order; tolerates incomplete draft configs. */
  edges(config: Config): Edge[];
  /** Whether `validate` looks at the account's synced templates (they are read only then). */
  usesTemplates?: boolean;
  /** The activation checks of the config (messages name the field, not the node). */
  validate(config: Config, report: Report, context: ValidationContext): void;
  /** The texts the runner fills with variables (checked for unknown placeholders). */
  texts?(config: Config): string[];
  /** The message the node sends, texts filled in by `render`. */
  build?(
    config: Config,
    render: (text: string) => string,
    template?: { components: Array<Record<string, unknown>> },
  ): Built;
  /** For a node that waits for the customer: the answer a message gives, null when none, a string when the config cannot judge. */
  answer?(config: Config, message: AnswerInput): Answer | null | string;
  /** reply_id -> next node_key of the options a customer can tap. */
  choices?(config: Config): Map<string, unknown>;
  /** After the node's message went out: where a node that does not wait goes on. */
  afterSend?(config: Config): unknown;
  /** After a sleep: where the run goes on. */
  resume?(config: Config): unknown;
  /** Runs the node when a walk enters it. */
  enter(config: Config, runtime: NodeRuntime): Promise<Step> | Step;
  /** Type-level only: the shape of a complete config. */
  readonly configShape?: C;
}

/** Declares a node type module with its config shape. */
export const defineNodeType =
  <C>() =>
  <const T extends string>(module: NodeTypeModule<T, C>): NodeTypeModule<T, C> =>
    module;
