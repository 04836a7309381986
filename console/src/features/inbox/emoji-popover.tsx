import { lazy, Suspense, useEffect, useRef } from "react";

const EmojiPanel = lazy(() => import("./emoji-panel"));

/**
 * The emoji picker in a popover: closes on Escape, on a click outside, and
 * after a pick. The picker's code and data load on first open.
 */
export function EmojiPopover(props: { label: string; onPick: (emoji: string) => void; onClose: () => void }) {
  const ref = useRef<HTMLDivElement>(null);
  const { onClose } = props;
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key === "Escape") onClose();
    };
    const onDown = (e: MouseEvent) => {
      if (ref.current && !ref.current.contains(e.target as Node)) onClose();
    };
    window.addEventListener("keydown", onKey);
    // On the next tick: the click that opened the popover is not one outside it.
    const timer = setTimeout(() => window.addEventListener("mousedown", onDown));
    return () => {
      clearTimeout(timer);
      window.removeEventListener("keydown", onKey);
      window.removeEventListener("mousedown", onDown);
    };
  }, [onClose]);
  return (
    <div ref={ref} className="emoji-popover">
      <Suspense fallback={<p className="emoji-status">Loading emoji…</p>}>
        <EmojiPanel
          label={props.label}
          onPick={(emoji) => {
            props.onPick(emoji);
            onClose();
          }}
        />
      </Suspense>
    </div>
  );
}
