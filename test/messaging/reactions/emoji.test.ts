import { describe, expect, it } from "vitest";
import { isSingleEmoji } from "../../../src/messaging/emoji.js";

describe("isSingleEmoji", () => {
  it.each([
    ["a plain emoji", "👍"],
    ["a face", "😀"],
    ["a skin-tone modifier", "👍🏽"],
    ["a flag (regional-indicator pair)", "🇫🇷"],
    ["a subdivision flag (tag sequence)", "🏴󠁧󠁢󠁥󠁮󠁧󠁿"],
    ["a ZWJ family", "👨‍👩‍👧‍👦"],
    ["a ZWJ profession with a skin tone", "🧑🏽‍💻"],
    ["a ZWJ sequence with variation selectors", "👁️‍🗨️"],
    ["a gendered ZWJ sequence", "🏃‍♀️"],
    ["a digit keycap", "1️⃣"],
    ["a hash keycap", "#️⃣"],
    ["an asterisk keycap without the variation selector", "*⃣"],
    ["a text-default symbol with the emoji variation selector", "❤️"],
    ["the copyright sign as emoji", "©️"],
    ["a lone skin-tone swatch", "🏿"],
    ["a pictograph newer than most runtimes (U+1FAE9)", "\u{1FAE9}"],
  ])("accepts %s", (_name, value) => {
    expect(isSingleEmoji(value)).toBe(true);
  });

  it.each([
    ["the empty string", ""],
    ["plain text", "ok"],
    ["a letter", "a"],
    ["a digit without keycap", "1"],
    ["a digit with only the variation selector", "1\uFE0F"],
    ["a hash without keycap", "#"],
    ["a space", " "],
    ["whitespace around an emoji", " 👍"],
    ["a newline after an emoji", "👍\n"],
    ["two emoji", "👍👍"],
    ["two flags", "🇫🇷🇩🇪"],
    ["an emoji and text", "👍ok"],
    ["a lone regional indicator", "🇦"],
    ["a text-default heart without the variation selector", "❤"],
    ["the copyright sign as text", "©"],
    ["a heart with the text variation selector", "❤\uFE0E"],
    ["an emoji with a combining accent", "😀\u0301"],
    ["a lone zero-width joiner", "\u200D"],
    ["a lone variation selector", "\uFE0F"],
    ["a CJK character", "字"],
  ])("rejects %s", (_name, value) => {
    expect(isSingleEmoji(value)).toBe(false);
  });
});
