import {
  Bell,
  BellOff,
  Check,
  ChevronLeft,
  Copy,
  FileText,
  Keyboard,
  type LucideIcon,
  Moon,
  Paperclip,
  Plus,
  Smile,
  Sun,
  TriangleAlert,
  X,
} from "lucide-react";
import { type ReactNode, useEffect, useId, useState } from "react";
import { errorText, HttpError } from "./api";

/** A labelled input; `error` is shown under it and tied to it for screen readers. */
export function Field(props: {
  label: string;
  error?: string;
  hint?: string;
  children: (ids: { id: string; describedBy?: string; invalid: boolean }) => ReactNode;
}) {
  const id = useId();
  const errorId = `${id}-error`;
  const hintId = `${id}-hint`;
  const describedBy = [props.error ? errorId : null, props.hint ? hintId : null].filter(Boolean).join(" ");
  return (
    <div className="field">
      <label htmlFor={id}>{props.label}</label>
      {props.children({ id, describedBy: describedBy || undefined, invalid: Boolean(props.error) })}
      {props.hint && !props.error ? (
        <p className="hint" id={hintId}>
          {props.hint}
        </p>
      ) : null}
      {props.error ? (
        <p className="field-error" id={errorId} role="alert">
          {props.error}
        </p>
      ) : null}
    </div>
  );
}

/** Splits an error between the fields it names and the form as a whole. */
export function formErrors(error: unknown, fields: readonly string[]) {
  if (!error) return { field: undefined, name: undefined, form: undefined };
  if (error instanceof HttpError) {
    const name = error.fieldOf(fields);
    if (name)
      return { field: error.message.slice(name.length).replace(/^[: ]\s*/, ""), name, form: undefined };
  }
  return { field: undefined, name: undefined, form: errorText(error) };
}

export function FormError({ error }: { error?: string }) {
  if (!error) return null;
  return (
    <p className="form-error" role="alert">
      {error}
    </p>
  );
}

export function PageHeader(props: { title: string; subtitle?: ReactNode; actions?: ReactNode }) {
  return (
    <header className="page-header">
      <div>
        <h1>{props.title}</h1>
        {props.subtitle ? <p className="subtitle">{props.subtitle}</p> : null}
      </div>
      {props.actions ? <div className="page-actions">{props.actions}</div> : null}
    </header>
  );
}

export function Empty({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="empty">
      <p className="empty-title">{title}</p>
      {children ? <div className="empty-body">{children}</div> : null}
    </div>
  );
}

export function Spinner({ label = "Loading" }: { label?: string }) {
  return (
    <div className="spinner" role="status" aria-live="polite">
      <span className="spinner-dot" aria-hidden="true" />
      {label}…
    </div>
  );
}

export function Badge({ tone = "neutral", children }: { tone?: string; children: ReactNode }) {
  return <span className={`badge badge-${tone}`}>{children}</span>;
}

/** The console's icons: lucide's line icons (SVG, the same on every system, no emoji font needed). */
export const ICONS = {
  attach: Paperclip,
  smile: Smile,
  plus: Plus,
  back: ChevronLeft,
  close: X,
  copy: Copy,
  check: Check,
  sun: Sun,
  moon: Moon,
  bell: Bell,
  bellOff: BellOff,
  keyboard: Keyboard,
  file: FileText,
  warning: TriangleAlert,
} as const;

/**
 * A line icon; the control around it carries the accessible name. `d` is a lucide icon, or an
 * SVG path drawn in the same style.
 */
export function Icon({ d, size = 20 }: { d: LucideIcon | string; size?: number }) {
  if (typeof d !== "string") return <SvgIcon d={d} size={size} />;
  return (
    <svg viewBox="0 0 24 24" width={size} height={size} aria-hidden="true" focusable="false">
      <path
        d={d}
        fill="none"
        stroke="currentColor"
        strokeWidth="1.8"
        strokeLinecap="round"
        strokeLinejoin="round"
      />
    </svg>
  );
}

function SvgIcon({ d: Component, size }: { d: LucideIcon; size: number }) {
  return <Component size={size} strokeWidth={1.8} aria-hidden="true" focusable="false" />;
}

/** Puts text on the clipboard; falls back to selecting a field's text where the API is refused. */
async function copyText(value: string, field: HTMLInputElement | null) {
  try {
    await navigator.clipboard.writeText(value);
    return true;
  } catch {
    field?.select();
    return document.execCommand?.("copy") ?? false;
  }
}

/** A read-only value (a key, a link, a secret) with a button that copies it. */
export function CopyField({ label, value }: { label: string; value: string }) {
  const [copied, setCopied] = useState(false);
  const [field, setField] = useState<HTMLInputElement | null>(null);
  useEffect(() => {
    if (!copied) return;
    const timer = setTimeout(() => setCopied(false), 2_000);
    return () => clearTimeout(timer);
  }, [copied]);
  return (
    <div className="copy-field">
      <input ref={setField} readOnly aria-label={label} value={value} onFocus={(e) => e.target.select()} />
      <button
        type="button"
        className="btn btn-small copy-btn"
        title={`Copy ${label.toLowerCase()}`}
        onClick={async () => setCopied(await copyText(value, field))}
      >
        <Icon d={copied ? ICONS.check : ICONS.copy} size={16} />
        <span>{copied ? "Copied" : "Copy"}</span>
      </button>
    </div>
  );
}
