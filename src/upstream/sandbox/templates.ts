/**
 * Message templates as Meta's `message_templates` edge shows them, and the
 * checks Meta applies when one is sent. The sandbox gives every business
 * account the demo templates below unless a test sets its own.
 */

export interface SandboxTemplate {
  id: string;
  name: string;
  language: string;
  status: "APPROVED" | "PENDING" | "REJECTED" | "PAUSED" | "DISABLED" | string;
  category: "MARKETING" | "UTILITY" | "AUTHENTICATION" | string;
  components: Array<Record<string, unknown>>;
}

export const DEMO_TEMPLATES: SandboxTemplate[] = [
  {
    id: "1192339204654487",
    name: "hello_world",
    language: "en_US",
    status: "APPROVED",
    category: "UTILITY",
    components: [
      { type: "HEADER", format: "TEXT", text: "Hello World" },
      { type: "BODY", text: "Welcome and congratulations!! Thank you for taking the time to test with us." },
      { type: "FOOTER", text: "WhatsApp Business Platform sandbox" },
    ],
  },
  {
    id: "920070352646140",
    name: "order_update",
    language: "en_US",
    status: "APPROVED",
    category: "UTILITY",
    components: [
      {
        type: "BODY",
        text: "Hi {{1}}, your order {{2}} is on its way.",
        example: { body_text: [["Mark", "#1042"]] },
      },
      { type: "FOOTER", text: "Reply STOP to opt out" },
    ],
  },
  {
    id: "731503812290114",
    name: "fall_sale",
    language: "en_US",
    status: "PENDING",
    category: "MARKETING",
    components: [
      {
        type: "BODY",
        text: "Hi {{1}}, our Fall Sale is on! Use promo code {{2}}.",
        example: { body_text: [["Mark", "FALL25"]] },
      },
      { type: "BUTTONS", buttons: [{ type: "QUICK_REPLY", text: "Stop promotions" }] },
    ],
  },
  {
    id: "580291836617023",
    name: "hello_world",
    language: "es",
    status: "APPROVED",
    category: "UTILITY",
    components: [{ type: "BODY", text: "¡Bienvenido! Gracias por probar con nosotros." }],
  },
];
