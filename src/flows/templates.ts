import type { NodeConfigs, NodeInput, NodeType } from "./nodes.js";
import type { TriggerType } from "./triggers.js";

/**
 * Built-in flows a user clones with POST /api/flows { template_slug }. Each is
 * a complete graph that passes the activation validator, laid out left to
 * right: a column per step (COLUMN apart), branches stacked (ROW apart).
 */

export interface FlowTemplate {
  slug: string;
  name: string;
  description: string;
  trigger_type: TriggerType;
  trigger_config: Record<string, unknown>;
  entry_node_id: string;
  nodes: NodeInput[];
}

const COLUMN = 320;
const ROW = 180;

/** A node at grid cell (column, row); rows may be fractional to centre a branch. */
function node<T extends NodeType>(
  node_key: string,
  node_type: T,
  config: NodeConfigs[T],
  column: number,
  row = 0,
): NodeInput {
  return {
    node_key,
    node_type,
    config: config as Record<string, unknown>,
    position_x: column * COLUMN,
    position_y: row * ROW,
  };
}

const welcomeMenu: FlowTemplate = {
  slug: "welcome_menu",
  name: "Welcome menu",
  description:
    "Greets a customer who writes support, help or hi, asks what the message is about with three buttons, and passes the conversation to an agent with the topic noted.",
  trigger_type: "keyword",
  trigger_config: { keywords: ["support", "help", "hi"], match_type: "contains", case_sensitive: false },
  entry_node_id: "start",
  nodes: [
    node("start", "start", { next_node_key: "menu" }, 0, 1),
    node(
      "menu",
      "send_buttons",
      {
        header_text: "Hello there!",
        text: "Thanks for getting in touch, {{contact.name}}. What can we help you with today?",
        footer_text: "Pick one option below",
        buttons: [
          { reply_id: "topic_order", title: "An order", next_node_key: "handoff_order" },
          { reply_id: "topic_billing", title: "Billing", next_node_key: "handoff_billing" },
          { reply_id: "topic_other", title: "Something else", next_node_key: "handoff_other" },
        ],
      },
      1,
      1,
    ),
    node("handoff_order", "handoff", { note: "Customer asked about an order (welcome menu)." }, 2, 0),
    node("handoff_billing", "handoff", { note: "Customer asked about billing (welcome menu)." }, 2, 1),
    node("handoff_other", "handoff", { note: "Customer picked 'Something else' in the welcome menu." }, 2, 2),
  ],
};

const faqAnswers = [
  {
    key: "opening_hours",
    title: "Opening hours",
    description: "When our team is available",
    answer:
      "Our team answers messages Monday to Friday from 9:00 to 18:00, and Saturdays from 10:00 to 14:00. Messages sent outside those hours are answered the next working day.",
  },
  {
    key: "delivery",
    title: "Delivery times",
    description: "How long shipping takes",
    answer:
      "Orders leave our warehouse within one working day. Standard delivery takes 2 to 4 working days; express delivery arrives the next working day.",
  },
  {
    key: "returns",
    title: "Returns",
    description: "Sending something back",
    answer:
      "You can return any unused item within 30 days. Reply with your order number and we will send you a prepaid return label.",
  },
  {
    key: "payment",
    title: "Payment methods",
    description: "Cards, transfers and more",
    answer: "We accept debit and credit cards, bank transfers and cash on delivery in selected areas.",
  },
];

const faqBot: FlowTemplate = {
  slug: "faq_bot",
  name: "FAQ bot",
  description:
    "Answers common questions when a customer writes faq, question or info: a list of topics, the chosen answer, then the run ends.",
  trigger_type: "keyword",
  trigger_config: { keywords: ["faq", "question", "info"], match_type: "contains", case_sensitive: false },
  entry_node_id: "start",
  nodes: [
    node("start", "start", { next_node_key: "topics" }, 0, 1.5),
    node(
      "topics",
      "send_list",
      {
        header_text: "Frequently asked questions",
        text: "Hi {{contact.name}}! Choose a topic and we will answer straight away.",
        footer_text: "An agent can help with anything else",
        button_label: "See topics",
        sections: [
          {
            title: "Popular topics",
            rows: faqAnswers.map((a) => ({
              reply_id: `faq_${a.key}`,
              title: a.title,
              description: a.description,
              next_node_key: `answer_${a.key}`,
            })),
          },
        ],
      },
      1,
      1.5,
    ),
    ...faqAnswers.map((a, i) =>
      node(`answer_${a.key}`, "send_message", { text: a.answer, next_node_key: "done" }, 2, i),
    ),
    node("done", "end", {}, 3, 1.5),
  ],
};

const leadCapture: FlowTemplate = {
  slug: "lead_capture",
  name: "Lead capture",
  description:
    "Welcomes a new customer on their first message, asks for their name, email and company, and hands the conversation to sales with the answers in the note.",
  trigger_type: "first_inbound_message",
  trigger_config: {},
  entry_node_id: "start",
  nodes: [
    node("start", "start", { next_node_key: "welcome" }, 0),
    node(
      "welcome",
      "send_message",
      {
        text: "Welcome! Before we connect you with our team, we have three quick questions.",
        next_node_key: "ask_name",
      },
      1,
    ),
    node(
      "ask_name",
      "collect_input",
      { prompt_text: "What is your name?", var_key: "name", validation: "text", next_node_key: "ask_email" },
      2,
    ),
    node(
      "ask_email",
      "collect_input",
      {
        prompt_text: "Nice to meet you, {{vars.name}}. Which email address can we reach you at?",
        var_key: "email",
        validation: "email",
        next_node_key: "ask_company",
      },
      3,
    ),
    node(
      "ask_company",
      "collect_input",
      {
        prompt_text: "And which company do you work for?",
        var_key: "company",
        validation: "text",
        next_node_key: "thanks",
      },
      4,
    ),
    node(
      "thanks",
      "send_message",
      {
        text: "Thank you, {{vars.name}}! Someone from our sales team will reply here shortly.",
        next_node_key: "to_sales",
      },
      5,
    ),
    node(
      "to_sales",
      "handoff",
      {
        note: "New lead: {{vars.name}} <{{vars.email}}> from {{vars.company}}, phone {{contact.phone}}.",
      },
      6,
    ),
  ],
};

export const FLOW_TEMPLATES: readonly FlowTemplate[] = [welcomeMenu, faqBot, leadCapture];

export function findTemplate(slug: string): FlowTemplate | undefined {
  return FLOW_TEMPLATES.find((t) => t.slug === slug);
}

/** The template list of GET /api/flows/templates. */
export function templateSummaries() {
  return FLOW_TEMPLATES.map((t) => ({
    slug: t.slug,
    name: t.name,
    description: t.description,
    trigger_type: t.trigger_type,
    node_count: t.nodes.length,
  }));
}
