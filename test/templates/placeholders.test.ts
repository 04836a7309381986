import { describe, expect, it } from "vitest";
import { buildNodeMessage } from "../../src/flows/runner/outbound.js";
import { validateFlowGraph } from "../../src/flows/validate.js";
import {
  bodyParameterNames,
  bodyParameterTexts,
  expectedParameters,
  givenParameters,
  parameterMismatch,
  renderTemplateBody,
  templateKey,
  templateProblem,
} from "../../src/templates/placeholders.js";

const ORDER = [
  { type: "HEADER", format: "TEXT", text: "Order {{1}}" },
  { type: "BODY", text: "Hi {{1}}, your order {{2}} ships {{1}}." },
  {
    type: "BUTTONS",
    buttons: [
      { type: "QUICK_REPLY", text: "Stop" },
      { type: "URL", url: "https://x.test/{{1}}" },
    ],
  },
];

describe("template placeholders", () => {
  it("counts distinct {{n}} per component, headers with media as one, URL buttons by index", () => {
    expect(expectedParameters(ORDER)).toEqual(
      new Map([
        ["header", 1],
        ["body", 2],
        ["button:1", 1],
      ]),
    );
    expect(expectedParameters([{ type: "HEADER", format: "IMAGE" }])).toEqual(new Map([["header", 1]]));
    expect(expectedParameters([{ type: "BODY", text: "No placeholders" }])).toEqual(new Map());
  });

  it("names the first component whose parameter count differs", () => {
    const given = givenParameters([
      { type: "header", parameters: [{ type: "text", text: "A1" }] },
      { type: "body", parameters: [{ type: "text", text: "Ada" }] },
      { type: "button", sub_type: "url", index: "1", parameters: [{ type: "text", text: "a1" }] },
    ]);
    expect(parameterMismatch(expectedParameters(ORDER), given as Map<string, number>)).toBe(
      "body expects 2 parameters, got 1",
    );
    expect(givenParameters("nope")).toBe("template.components must be an array");
    expect(givenParameters([{ type: "body" }])).toMatch(/parameters must be an array/);
  });

  it("renders the body as the customer reads it", () => {
    expect(renderTemplateBody(ORDER, ["Ada", "#7"])).toBe("Hi Ada, your order #7 ships Ada.");
    expect(renderTemplateBody([{ type: "HEADER", text: "x" }], [])).toBeNull();
    const texts = bodyParameterTexts([
      {
        type: "body",
        parameters: [
          { type: "text", text: "Ada" },
          { type: "currency", currency: { fallback_value: "$100.99", code: "USD", amount_1000: 100990 } },
        ],
      },
    ]);
    expect(renderTemplateBody([{ type: "BODY", text: "{{1}} owes {{2}} by {{3}}" }], texts)).toBe(
      "Ada owes $100.99 by {{3}}",
    );
  });

  it("checks named placeholders by parameter_name, as Meta does, and renders them", () => {
    const named = [{ type: "BODY", text: "Hello {{first_name}}, {{city}} store opens soon." }];
    const send = (parameters: unknown[]) => ({
      name: "offer",
      language: "en_US",
      components: [{ type: "body", parameters }],
    });
    const approved = { status: "APPROVED", components: named };
    const ada = { type: "text", parameter_name: "first_name", text: "Ada" };
    const porto = { type: "text", parameter_name: "city", text: "Porto" };
    expect(templateProblem(approved, send([ada, porto]))).toBeNull();
    expect(templateProblem(approved, send([ada]))).toMatch(/body expects 2 parameters, got 1/);
    expect(templateProblem(approved, send([ada, { type: "text", text: "Porto" }]))).toMatch(
      /each parameter needs parameter_name \(one of first_name, city\)/,
    );
    expect(templateProblem(approved, send([ada, { ...porto, parameter_name: "town" }]))).toMatch(
      /no placeholder named "town"/,
    );
    expect(templateProblem(approved, send([ada, ada]))).toMatch(/"first_name" is given twice/);
    expect(
      renderTemplateBody(named, [], bodyParameterNames([{ type: "body", parameters: [porto, ada] }])),
    ).toBe("Hello Ada, Porto store opens soon.");
  });

  it("explains why a template cannot be sent", () => {
    const request = { name: "order", language: "en_US" };
    expect(templateProblem(undefined, request)).toMatch(/not among the synced templates/);
    expect(templateProblem({ status: "REJECTED", components: [] }, request)).toMatch(
      /REJECTED, not APPROVED/,
    );
    expect(templateProblem({ status: "APPROVED", components: [] }, request)).toBeNull();
  });
});

describe("send_template nodes", () => {
  const contact = { name: "Ada", phone: "15550001", waId: "15550001", tags: [] as string[] };

  it("build Meta's template message with {{vars}} filled in the parameters", () => {
    const built = buildNodeMessage(
      "send_template",
      {
        template_name: "order_update",
        language: "en_US",
        components: [
          {
            type: "body",
            parameters: [
              { type: "text", text: "{{contact.name}}" },
              { type: "text", text: "{{vars.order}}" },
            ],
          },
        ],
      },
      { order: "#42" },
      contact,
      { components: [{ type: "BODY", text: "Hi {{1}}, order {{2}} ships today." }] },
    );
    expect(built).toEqual({
      ok: true,
      message: {
        outbound: {
          type: "template",
          template: {
            name: "order_update",
            language: { code: "en_US" },
            components: [
              {
                type: "body",
                parameters: [
                  { type: "text", text: "Ada" },
                  { type: "text", text: "#42" },
                ],
              },
            ],
          },
        },
        text: "Hi Ada, order #42 ships today.",
      },
    });
  });

  it("name what is wrong with a config edited into a bad shape", () => {
    expect(buildNodeMessage("send_template", { language: "en_US" }, {}, contact)).toEqual({
      ok: false,
      problem: "config.template_name must be a non-empty string",
    });
    expect(
      buildNodeMessage(
        "send_template",
        { template_name: "x", language: "en", components: [{ type: "body" }] },
        {},
        contact,
      ),
    ).toEqual({ ok: false, problem: "every component needs a type and a parameters array" });
    expect(
      buildNodeMessage("send_template", { template_name: "x", language: "en" }, {}, contact),
    ).toMatchObject({
      ok: true,
      message: { text: "Template x (en)" },
    });
  });

  it("are checked on activation against the given templates, with warnings for unknown placeholders", () => {
    const flow = (config: Record<string, unknown>) => ({
      trigger_type: "manual",
      trigger_config: {},
      entry_node_id: "t",
      nodes: [{ node_key: "t", node_type: "send_template", config }],
      templates: new Map([
        [
          templateKey("order", "en_US"),
          { status: "APPROVED", components: [{ type: "BODY", text: "{{1}}" }] },
        ],
      ]),
    });
    const ok = validateFlowGraph(
      flow({
        template_name: "order",
        language: "en_US",
        components: [{ type: "body", parameters: [{ type: "text", text: "{{vars.x}}" }] }],
      }),
    );
    expect(ok).toEqual([]);
    const issues = validateFlowGraph(
      flow({
        template_name: "order",
        language: "en_US",
        components: [
          {
            type: "body",
            parameters: [
              { type: "text", text: "{{moon}}" },
              { type: "text", text: "b" },
            ],
          },
        ],
      }),
    );
    expect(issues.map((i) => [i.severity, i.code])).toEqual([
      ["error", "template_unusable"],
      ["warning", "unknown_placeholder"],
    ]);
  });
});
