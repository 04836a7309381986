import { describe, expect, it } from "vitest";
import {
  expressionProblem,
  fillParameters,
  renderForContact,
  renderValue,
  templateShape,
} from "../../src/campaigns/parameters.js";

const contact = { name: "Ada", phone: "15550001", attributes: { city: "Lisbon" } };

describe("campaign parameter expressions", () => {
  it("renders contact fields with fallbacks", () => {
    expect(renderValue("Hi {{contact.name}} from {{contact.attributes.city}}", contact)).toBe(
      "Hi Ada from Lisbon",
    );
    expect(renderValue("{{ contact.name | there }}", { ...contact, name: null })).toBe(" there ");
    expect(renderValue("{{contact.name|there}}", { ...contact, name: "  " })).toBe("there");
    expect(renderValue("{{contact.phone}}", contact)).toBe("+15550001");
    expect(renderValue("{{contact.attributes.size|M}}", contact)).toBe("M");
    expect(renderValue("{{contact.attributes.size}}", contact)).toBe("");
  });

  it("names unknown fields", () => {
    expect(expressionProblem("{{contact.name}} {{contact.attributes.a-b.c}}")).toBeNull();
    expect(expressionProblem("{{vars.x}}")).toMatch(/unknown field \{\{vars.x\}\}/);
    expect(expressionProblem("{{contact.email|x}}")).toMatch(/contact.email/);
  });
});

describe("template shapes and filling them", () => {
  const positional = templateShape([
    { type: "HEADER", format: "TEXT", text: "For {{1}}" },
    { type: "BODY", text: "Hi {{2}} and {{1}}" },
    {
      type: "BUTTONS",
      buttons: [
        { type: "QUICK_REPLY", text: "Stop" },
        { type: "URL", url: "https://x.test/{{1}}" },
      ],
    },
  ]);

  it("orders positional placeholders by number and finds URL buttons by index", () => {
    expect(positional.body).toEqual({ keys: ["1", "2"], named: false });
    expect(positional.buttons).toEqual([{ index: 1, keys: ["1"] }]);
  });

  it("builds Meta's components and the body as read", () => {
    const filled = fillParameters(positional, {
      header: ["{{contact.name}}"],
      body: ["{{contact.name}}", "{{contact.attributes.city}}"],
      buttons: [{ index: 1, parameters: ["{{contact.phone}}"] }],
    });
    if (!filled.ok) throw new Error(filled.problem);
    const rendered = renderForContact(positional, filled.filled, contact);
    expect(rendered.text).toBe("Hi Lisbon and Ada");
    expect(rendered.missing).toBeNull();
    expect(rendered.components).toEqual([
      { type: "header", parameters: [{ type: "text", text: "Ada" }] },
      {
        type: "body",
        parameters: [
          { type: "text", text: "Ada" },
          { type: "text", text: "Lisbon" },
        ],
      },
      { type: "button", sub_type: "url", index: "1", parameters: [{ type: "text", text: "+15550001" }] },
    ]);
    const empty = renderForContact(positional, filled.filled, { name: null, phone: "1", attributes: {} });
    expect(empty.missing).toBe("header {{1}}");
  });

  it("names placeholders by name and sends parameter_name; media headers take a link or id", () => {
    const named = templateShape([
      { type: "HEADER", format: "VIDEO" },
      { type: "BODY", text: "Hi {{first_name}}" },
    ]);
    const filled = fillParameters(named, { header: ["4490001"], body: { first_name: "{{contact.name}}" } });
    if (!filled.ok) throw new Error(filled.problem);
    expect(renderForContact(named, filled.filled, contact).components).toEqual([
      { type: "header", parameters: [{ type: "video", video: { id: "4490001" } }] },
      { type: "body", parameters: [{ type: "text", parameter_name: "first_name", text: "Ada" }] },
    ]);
    expect(fillParameters(named, { body: { first_name: "x" } })).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/header is video/),
    });
    expect(fillParameters(templateShape([{ type: "BODY", text: "none" }]), { body: ["x"] })).toMatchObject({
      ok: false,
      problem: "parameters.body: the template's body has no placeholders",
    });
  });
});
