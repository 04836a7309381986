import { describe, expect, it } from "vitest";
import { buildNodeMessage, replyChoices } from "../../../src/flows/runner/outbound.js";
import {
  checkInput,
  evaluateCondition,
  matchesKeyword,
  readKeywordTrigger,
  renderText,
} from "../../../src/flows/runner/rules.js";

const contact = { name: "Ada", phone: "4915112345678", waId: "4915112345678", tags: ["VIP", "newsletter"] };

describe("renderText", () => {
  it("fills vars and contact fields, empties unknown vars and leaves other braces alone", () => {
    expect(
      renderText(
        "Hi {{contact.name}} ({{ contact.phone }}), {{vars.email}}{{vars.none}} {{other.x}}",
        {
          email: "a@b.co",
        },
        contact,
      ),
    ).toBe("Hi Ada (4915112345678), a@b.co {{other.x}}");
    expect(renderText("{{contact.name}}", {}, { ...contact, name: null })).toBe("");
    expect(renderText("{{vars.toString}}", {}, contact)).toBe("");
  });
});

describe("keyword triggers", () => {
  const trigger = (config: unknown) => readKeywordTrigger(config)!;

  it("contains (default) matches whole words, case-insensitively by default", () => {
    const t = trigger({ keywords: ["hi", "order status"] });
    expect(matchesKeyword("Hi there", t)).toBe(true);
    expect(matchesKeyword("what's my ORDER STATUS?", t)).toBe(true);
    expect(matchesKeyword("this", t)).toBe(false);
    expect(matchesKeyword("orders", t)).toBe(false);
  });

  it("exact needs the whole message; case_sensitive is honoured", () => {
    const t = trigger({ keywords: ["Help"], match_type: "exact", case_sensitive: true });
    expect(matchesKeyword("  Help ", t)).toBe(true);
    expect(matchesKeyword("help", t)).toBe(false);
    expect(matchesKeyword("Help me", t)).toBe(false);
  });

  it("a config without usable keywords triggers nothing", () => {
    expect(readKeywordTrigger({ keywords: [] })).toBeNull();
    expect(readKeywordTrigger({ keywords: [" ", 3] })).toBeNull();
    expect(readKeywordTrigger({})).toBeNull();
  });
});

describe("checkInput", () => {
  it.each([
    ["text", "  Ada  ", "Ada"],
    ["email", "ada@example.com", "ada@example.com"],
    ["number", "-12,5", "-12,5"],
    ["phone", "+49 (151) 123-4567", "+49 (151) 123-4567"],
  ])("accepts a valid %s answer, trimmed", (validation, raw, value) => {
    expect(checkInput(raw, validation, undefined)).toEqual({ ok: true, value });
  });

  it.each([
    ["text", "   "],
    ["email", "ada@example"],
    ["number", "12a"],
    ["phone", "12345"],
    ["phone", "call me"],
  ])("rejects an invalid %s answer: %j", (validation, raw) => {
    expect(checkInput(raw, validation, undefined)).toEqual({ ok: false });
  });

  it("checks a regex, and reports a regex that does not compile as a config problem", () => {
    expect(checkInput("AB-123", "regex", "^[A-Z]{2}-\\d{3}$")).toEqual({ ok: true, value: "AB-123" });
    expect(checkInput("ab-123", "regex", "^[A-Z]{2}-\\d{3}$")).toEqual({ ok: false });
    expect(checkInput("x", "regex", "(")).toEqual({
      invalidConfig: "regex is not a valid regular expression",
    });
  });

  it("refuses answers longer than 1024 characters", () => {
    expect(checkInput("a".repeat(1025), "text", undefined)).toEqual({ ok: false });
  });
});

describe("evaluateCondition", () => {
  const cond = (config: Record<string, unknown>, vars: Record<string, unknown> = {}) =>
    evaluateCondition({ true_next: "t", false_next: "f", ...config }, vars, contact);

  it("compares vars and contact fields trimmed and case-insensitively", () => {
    expect(
      cond({ subject: "var", subject_key: "plan", operator: "equals", value: "pro" }, { plan: " PRO " }),
    ).toBe(true);
    expect(
      cond({ subject: "var", subject_key: "plan", operator: "contains", value: "r" }, { plan: "pro" }),
    ).toBe(true);
    expect(cond({ subject: "var", subject_key: "plan", operator: "present" }, { plan: "" })).toBe(false);
    expect(cond({ subject: "var", subject_key: "plan", operator: "absent" }, {})).toBe(true);
    expect(cond({ subject: "contact_field", subject_key: "name", operator: "equals", value: "ada" })).toBe(
      true,
    );
    expect(
      cond({ subject: "contact_field", subject_key: "phone", operator: "contains", value: "49151" }),
    ).toBe(true);
  });

  it("looks for a tag by value or subject_key", () => {
    expect(cond({ subject: "tag", subject_key: "vip", operator: "present" })).toBe(true);
    expect(cond({ subject: "tag", subject_key: "tags", operator: "equals", value: "newsletter" })).toBe(true);
    expect(cond({ subject: "tag", subject_key: "news", operator: "contains" })).toBe(true);
    expect(cond({ subject: "tag", subject_key: "blocked", operator: "absent" })).toBe(true);
  });

  it("answers null for configs it cannot evaluate", () => {
    expect(cond({ subject: "contact_field", subject_key: "password", operator: "present" })).toBeNull();
    expect(cond({ subject: "var", subject_key: "x", operator: "greater" })).toBeNull();
    expect(cond({ subject: "moon", subject_key: "x", operator: "present" })).toBeNull();
  });
});

describe("buildNodeMessage", () => {
  it("builds a document with caption and filename", () => {
    const built = buildNodeMessage(
      "send_media",
      {
        media_type: "document",
        media_url: "https://x.test/a.pdf",
        caption: "For {{contact.name}}",
        filename: "a.pdf",
      },
      {},
      contact,
    );
    expect(built).toEqual({
      ok: true,
      message: {
        outbound: {
          type: "document",
          document: { link: "https://x.test/a.pdf", caption: "For Ada", filename: "a.pdf" },
        },
        text: "For Ada",
      },
    });
  });

  it("names what is wrong with a config edited into a bad shape", () => {
    expect(buildNodeMessage("send_buttons", { text: "x", buttons: [] }, {}, contact)).toEqual({
      ok: false,
      problem: "config.buttons must hold at least one button",
    });
    expect(
      buildNodeMessage("send_media", { media_type: "audio", media_url: "u" }, {}, contact),
    ).toMatchObject({
      ok: false,
    });
  });

  it("maps list rows to their next nodes", () => {
    const choices = replyChoices("send_list", {
      sections: [
        { rows: [{ reply_id: "a", next_node_key: "x" }] },
        { rows: [{ reply_id: "b", next_node_key: "y" }] },
      ],
    });
    expect([...choices]).toEqual([
      ["a", "x"],
      ["b", "y"],
    ]);
  });
});
