/**
 * The reaction rule (product.md section 8): exactly one grapheme cluster that is
 * shown as an emoji. Checked structurally (UTS #51 sequence shapes over Unicode
 * properties) rather than against the runtime's list of recommended emoji, so an
 * emoji newer than the runtime's Unicode data is still accepted.
 */

const graphemes = new Intl.Segmenter(undefined, { granularity: "grapheme" });

// `1️⃣`, `#️⃣`, also without the variation selector (minimally qualified).
const KEYCAP = /^[#*0-9]\uFE0F?\u20E3$/u;
// A flag is a pair of regional indicators; a lone one is a letter, not a flag.
const FLAG = /^\p{Regional_Indicator}{2}$/u;
// A pictograph with an optional skin tone, emoji variation selector or tag
// sequence (subdivision flags), joined with ZWJ into families, professions...
const ELEMENT = String.raw`[[\p{Extended_Pictographic}\p{Emoji_Presentation}]--\p{Regional_Indicator}](?:\p{Emoji_Modifier}|\uFE0F|[\u{E0020}-\u{E007E}]+\u{E007F})?`;
const SEQUENCE = new RegExp(`^${ELEMENT}(?:\\u200D${ELEMENT})*$`, "v");
// A lone pictograph that renders as text unless followed by U+FE0F (`©`, `☺`, `❤`).
// Unassigned pictographic code points are future emoji, which default to emoji.
// biome-ignore lint/complexity/useRegexLiterals: TypeScript rejects the "v" flag in a literal below target ES2024; Node 20 supports it.
const TEXT_BY_DEFAULT = new RegExp(
  String.raw`^[\p{Extended_Pictographic}--\p{Emoji_Presentation}--\p{Cn}]$`,
  "v",
);

export function isSingleEmoji(value: string): boolean {
  let count = 0;
  let cluster = "";
  for (const { segment } of graphemes.segment(value)) {
    count += 1;
    if (count > 1) return false;
    cluster = segment;
  }
  if (count !== 1) return false;
  if (KEYCAP.test(cluster) || FLAG.test(cluster)) return true;
  return SEQUENCE.test(cluster) && !TEXT_BY_DEFAULT.test(cluster);
}
