/**
 * The full emoji picker (frimousse), loaded only when first opened: its code
 * is a chunk of its own, and its data comes from the console's own assets
 * (EMOJIBASE_URL, see vite.config.ts), never from a CDN.
 */
import {
  EmojiPicker,
  type EmojiPickerListCategoryHeaderProps,
  type EmojiPickerListEmojiProps,
} from "frimousse";

declare const EMOJIBASE_URL: string;

function CategoryHeader({ category, ...props }: EmojiPickerListCategoryHeaderProps) {
  return (
    <div {...props} className="emoji-category">
      {category.label}
    </div>
  );
}

function EmojiButton({ emoji, ...props }: EmojiPickerListEmojiProps) {
  return (
    <button {...props} className="emoji-cell" aria-label={emoji.label} title={emoji.label}>
      {emoji.emoji}
    </button>
  );
}

export default function EmojiPanel(props: { label: string; onPick: (emoji: string) => void }) {
  return (
    <EmojiPicker.Root
      className="emoji-panel"
      aria-label={props.label}
      emojibaseUrl={EMOJIBASE_URL}
      locale="en"
      columns={8}
      onEmojiSelect={(e) => props.onPick(e.emoji)}
    >
      <EmojiPicker.Search
        className="emoji-search"
        aria-label="Search emoji"
        placeholder="Search emoji"
        autoFocus
      />
      <EmojiPicker.Viewport className="emoji-viewport">
        <EmojiPicker.Loading className="emoji-status">Loading emoji…</EmojiPicker.Loading>
        <EmojiPicker.Empty className="emoji-status">No emoji found</EmojiPicker.Empty>
        <EmojiPicker.List className="emoji-list" components={{ CategoryHeader, Emoji: EmojiButton }} />
      </EmojiPicker.Viewport>
    </EmojiPicker.Root>
  );
}
