import { describe, expect, it } from "vitest";
import { canAdvance } from "../../../src/messaging/message-status.js";
import { readTimestamp, readWebhookBatch } from "../../../src/messaging/webhook-payload.js";
import { verifyWebhookSignature } from "../../../src/messaging/webhook-signature.js";
import { batch, messagesChange, sign, statusChange, textMessage } from "./meta.js";

describe("verifyWebhookSignature", () => {
  const raw = '{"entry":[]}';

  it("accepts the HMAC of the exact raw bytes, hex in either case", () => {
    expect(verifyWebhookSignature(raw, sign(raw, "s3cret"), "s3cret")).toBe(true);
    expect(
      verifyWebhookSignature(raw, sign(raw, "s3cret").toUpperCase().replace("SHA256", "sha256"), "s3cret"),
    ).toBe(true);
  });

  it("hashes non-ASCII text as UTF-8, as Meta signs it", () => {
    const text = '{"text":"¿Tienes café? 👍"}';
    expect(verifyWebhookSignature(text, sign(text, "s"), "s")).toBe(true);
  });

  it.each([
    ["another secret", sign(raw, "other")],
    ["a body with one more space", sign(`${raw} `, "s3cret")],
    ["no prefix", sign(raw, "s3cret").slice("sha256=".length)],
    ["a truncated digest", sign(raw, "s3cret").slice(0, -2)],
    ["no header", undefined],
    ["a repeated header", [sign(raw, "s3cret"), sign(raw, "s3cret")]],
  ])("rejects %s", (_name, header) => {
    expect(verifyWebhookSignature(raw, header, "s3cret")).toBe(false);
  });
});

describe("readWebhookBatch", () => {
  it("names where each skipped part was and why", () => {
    const read = readWebhookBatch({
      entry: [
        { changes: [messagesChange("1", [{ id: "wamid.x", type: "text" }, textMessage("2", "ok")])] },
        { id: "no changes" },
        { changes: [statusChange("1", [{ id: "wamid.y", status: "warning" }])] },
      ],
    });
    expect(read.problems).toEqual([
      "entry[0].changes[0].value.messages[0]: no from",
      "entry[1]: no changes array",
      'entry[2].changes[0].value.statuses[0]: unknown status "warning"',
    ]);
    expect(read.changes.map((c) => [c.at, c.items.length, c.statuses.length])).toEqual([
      ["entry[0].changes[0]", 1, 0],
      ["entry[2].changes[0]", 0, 0],
    ]);
  });

  it("ignores fields other than messages without calling them problems", () => {
    const read = readWebhookBatch(batch({ field: "account_update", value: { event: "VERIFIED_ACCOUNT" } }));
    expect(read).toEqual({ changes: [], templateUpdates: [], problems: [] });
  });

  it("reads a reaction without emoji as a removal", () => {
    const read = readWebhookBatch(
      batch(
        messagesChange("1", [
          { from: "2", id: "wamid.r", type: "reaction", reaction: { message_id: "wamid.t" } },
        ]),
      ),
    );
    expect(read.changes[0]?.items).toEqual([
      {
        kind: "reaction",
        upstreamId: "wamid.r",
        from: "2",
        targetMessageId: "wamid.t",
        emoji: null,
        timestamp: null,
      },
    ]);
  });
});

describe("readTimestamp", () => {
  it.each([
    ["1749416383", "2025-06-08T20:59:43.000Z"],
    [1749416383, "2025-06-08T20:59:43.000Z"],
  ])("reads %j as Unix seconds", (value, iso) => {
    expect(readTimestamp(value)?.toISOString()).toBe(iso);
  });

  it.each([["-1"], ["1.5"], ["99999999999999999"], ["soon"], [null], [{}]])(
    "has no timestamp for %j",
    (value) => {
      expect(readTimestamp(value)).toBeNull();
    },
  );
});

describe("canAdvance", () => {
  it.each([
    ["pending", "sent", true],
    ["sent", "delivered", true],
    ["sent", "read", true],
    ["delivered", "failed", true],
    ["delivered", "sent", false],
    ["read", "delivered", false],
    ["read", "failed", false],
    ["failed", "read", false],
    ["received", "read", false],
  ] as const)("%s -> %s: %s", (from, to, allowed) => {
    expect(canAdvance(from, to)).toBe(allowed);
  });
});
