import { useMutation } from "@tanstack/react-query";
import { type FormEvent, type KeyboardEvent, useCallback, useEffect, useId, useRef, useState } from "react";
import { templateComponent } from "../../lib/format";
import type { WaTemplate } from "../../lib/types";
import { FormError, ICONS, Icon } from "../../lib/ui";
import { addNote, sendMedia, sendTemplate, sendText, useCannedResponses, useTemplates } from "./api";
import { EmojiPopover } from "./emoji-popover";

function placeholders(t: WaTemplate) {
  const body = templateComponent(t, "BODY")?.text ?? "";
  return [...new Set([...body.matchAll(/\{\{(\d+)\}\}/g)].map((m) => Number(m[1])))].sort((a, b) => a - b);
}

function TemplatePicker(props: { conversationId: string; onSent: () => void }) {
  const templates = useTemplates("APPROVED");
  const [chosen, setChosen] = useState("");
  const [params, setParams] = useState<string[]>([]);
  const template = templates.data?.find((t) => `${t.name}|${t.language}` === chosen);
  const slots = template ? placeholders(template) : [];
  const send = useMutation({
    mutationFn: () => {
      if (!template) throw new Error("Choose a template");
      const components = slots.length
        ? [{ type: "body", parameters: slots.map((_, i) => ({ type: "text", text: params[i] ?? "" })) }]
        : undefined;
      return sendTemplate(props.conversationId, {
        name: template.name,
        language: template.language,
        components,
      });
    },
    onSuccess: () => {
      setChosen("");
      setParams([]);
      props.onSent();
    },
  });
  return (
    <form
      className="template-picker"
      onSubmit={(e) => {
        e.preventDefault();
        send.mutate();
      }}
    >
      <p className="composer-closed">
        The customer has not written for 24 hours: WhatsApp only allows an approved template now.
      </p>
      <div className="template-row">
        <select aria-label="Template" value={chosen} onChange={(e) => setChosen(e.target.value)}>
          <option value="">Choose a template…</option>
          {templates.data?.map((t) => (
            <option key={t.id} value={`${t.name}|${t.language}`}>
              {t.name} ({t.language})
            </option>
          ))}
        </select>
        {slots.map((n, i) => (
          <input
            key={n}
            aria-label={`Template parameter {{${n}}}`}
            placeholder={`{{${n}}}`}
            value={params[i] ?? ""}
            onChange={(e) => setParams((p) => Object.assign([...p], { [i]: e.target.value }))}
          />
        ))}
        <button type="submit" className="btn btn-primary" disabled={!template || send.isPending}>
          Send template
        </button>
      </div>
      {template ? <p className="template-preview">{templateComponent(template, "BODY")?.text}</p> : null}
      <FormError error={send.error?.message} />
    </form>
  );
}

/** Dispatched on window with detail "reply" or "note": the composer takes that mode and the focus. */
export const COMPOSE_EVENT = "wa-inbox:compose";

export function Composer(props: { conversationId: string; windowOpen: boolean; onSent: () => void }) {
  const [text, setText] = useState("");
  const [mode, setMode] = useState<"reply" | "note">("reply");
  const [highlight, setHighlight] = useState(0);
  const fileRef = useRef<HTMLInputElement>(null);
  const textRef = useRef<HTMLTextAreaElement>(null);
  // A chosen file waits here, previewed, until the agent sends it (or takes it back).
  const [attachment, setAttachment] = useState<{ file: File; url: string | null } | null>(null);
  const suggestionsId = useId();
  const [pickingEmoji, setPickingEmoji] = useState(false);
  const closeEmoji = useCallback(() => setPickingEmoji(false), []);
  /** Puts an emoji where the cursor is (or at the end), and the cursor after it. */
  const insertEmoji = (emoji: string) => {
    const area = textRef.current;
    const start = area?.selectionStart ?? text.length;
    const end = area?.selectionEnd ?? text.length;
    setText(text.slice(0, start) + emoji + text.slice(end));
    requestAnimationFrame(() => {
      area?.focus();
      area?.setSelectionRange(start + emoji.length, start + emoji.length);
    });
  };

  // The keyboard shortcuts "r" and "n" (inbox-page) open the composer in that mode.
  useEffect(() => {
    const onCompose = (e: Event) => {
      const wanted = (e as CustomEvent<"reply" | "note">).detail;
      if (wanted === "reply" && !props.windowOpen) return;
      setMode(wanted);
      requestAnimationFrame(() => textRef.current?.focus());
    };
    window.addEventListener(COMPOSE_EVENT, onCompose);
    return () => window.removeEventListener(COMPOSE_EVENT, onCompose);
  }, [props.windowOpen]);
  useEffect(
    () => () => {
      if (attachment?.url) URL.revokeObjectURL(attachment.url);
    },
    [attachment],
  );
  const canned = useCannedResponses();

  const shortcut = mode === "reply" && /^\/[a-z0-9_-]*$/.test(text) ? text.slice(1) : null;
  const suggestions =
    shortcut !== null && canned.data
      ? canned.data.filter((c) => c.shortcut.startsWith(shortcut)).slice(0, 6)
      : [];

  const send = useMutation({
    mutationFn: (body: string) =>
      mode === "note" ? addNote(props.conversationId, body) : sendText(props.conversationId, body),
    onSuccess: () => {
      setText("");
      props.onSent();
    },
    // A failed send is stored too (status failed): show it in the thread.
    onError: () => props.onSent(),
  });
  const upload = useMutation({
    mutationFn: (file: File) => {
      const form = new FormData();
      form.set("file", file);
      if (text.trim()) form.set("caption", text.trim());
      return sendMedia(props.conversationId, form);
    },
    onSuccess: () => {
      setText("");
      setAttachment(null);
      props.onSent();
    },
  });

  const submit = (e?: FormEvent) => {
    e?.preventDefault();
    if (suggestions.length) return insert(suggestions[highlight]?.text ?? "");
    const body = text.trim();
    if (body) send.mutate(body);
  };
  const insert = (value: string) => {
    setText(value);
    setHighlight(0);
  };
  const onKeyDown = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    if (suggestions.length && (e.key === "ArrowDown" || e.key === "ArrowUp")) {
      e.preventDefault();
      const step = e.key === "ArrowDown" ? 1 : -1;
      setHighlight((h) => (h + step + suggestions.length) % suggestions.length);
      return;
    }
    if (e.key === "Enter" && !e.shiftKey) {
      e.preventDefault();
      submit();
    }
  };

  if (!props.windowOpen && mode === "reply") {
    return (
      <div className="composer">
        <TemplatePicker conversationId={props.conversationId} onSent={props.onSent} />
        <button type="button" className="btn btn-ghost btn-small" onClick={() => setMode("note")}>
          Write an internal note instead
        </button>
      </div>
    );
  }

  const error = send.error ?? upload.error;
  return (
    <form className={`composer${mode === "note" ? " composer-note" : ""}`} onSubmit={submit}>
      <fieldset className="composer-modes">
        <legend className="sr-only">Message kind</legend>
        <button
          type="button"
          className={`tab${mode === "reply" ? " active" : ""}`}
          aria-pressed={mode === "reply"}
          onClick={() => setMode("reply")}
          disabled={!props.windowOpen}
        >
          Reply
        </button>
        <button
          type="button"
          className={`tab${mode === "note" ? " active" : ""}`}
          aria-pressed={mode === "note"}
          onClick={() => setMode("note")}
        >
          Internal note
        </button>
      </fieldset>
      {suggestions.length ? (
        <ul className="suggestions" id={suggestionsId} aria-label="Canned responses">
          {suggestions.map((c, i) => (
            <li key={c.id}>
              <button
                type="button"
                onClick={() => insert(c.text)}
                className={i === highlight ? "active" : ""}
              >
                <strong>/{c.shortcut}</strong> <span>{c.text}</span>
              </button>
            </li>
          ))}
        </ul>
      ) : null}
      {attachment ? (
        <section className="attachment-preview" aria-label="Attachment to send">
          {attachment.url ? (
            <img src={attachment.url} alt={`Preview of ${attachment.file.name}`} />
          ) : (
            <Icon d={ICONS.file} size={28} />
          )}
          <span className="attachment-name">
            {attachment.file.name}{" "}
            <span className="muted">({Math.max(1, Math.round(attachment.file.size / 1024))} KB)</span>
          </span>
          <button
            type="button"
            className="btn btn-primary btn-small"
            onClick={() => upload.mutate(attachment.file)}
            disabled={upload.isPending}
          >
            Send attachment
          </button>
          <button type="button" className="btn btn-small" onClick={() => setAttachment(null)}>
            Remove
          </button>
        </section>
      ) : null}
      <div className="composer-row">
        {mode === "reply" ? (
          <>
            <input
              ref={fileRef}
              type="file"
              className="sr-only"
              aria-label="Attach a file"
              tabIndex={-1}
              onChange={(e) => {
                const file = e.target.files?.[0];
                if (file)
                  setAttachment({
                    file,
                    url: file.type.startsWith("image/") ? URL.createObjectURL(file) : null,
                  });
                e.target.value = "";
              }}
            />
            <button
              type="button"
              className="icon-btn"
              aria-label="Attach a file"
              onClick={() => fileRef.current?.click()}
              disabled={upload.isPending}
            >
              <Icon d={ICONS.attach} />
            </button>
          </>
        ) : null}
        <button
          type="button"
          className="icon-btn"
          aria-label="Insert emoji"
          aria-expanded={pickingEmoji}
          onClick={() => setPickingEmoji((p) => !p)}
        >
          <Icon d={ICONS.smile} />
        </button>
        {pickingEmoji ? <EmojiPopover label="Emoji" onPick={insertEmoji} onClose={closeEmoji} /> : null}
        <textarea
          ref={textRef}
          aria-label={mode === "note" ? "Internal note" : "Message"}
          placeholder={
            mode === "note"
              ? "Only your team sees notes"
              : canned.data
                ? "Type a message, / for canned responses"
                : "Type a message"
          }
          rows={2}
          value={text}
          onChange={(e) => {
            setText(e.target.value);
            setHighlight(0);
          }}
          onKeyDown={onKeyDown}
          aria-controls={suggestions.length ? suggestionsId : undefined}
        />
        <button type="submit" className="btn btn-primary" disabled={send.isPending || !text.trim()}>
          {mode === "note" ? "Add note" : "Send"}
        </button>
      </div>
      {upload.isPending ? (
        <p className="muted" role="status">
          Uploading…
        </p>
      ) : null}
      <FormError error={error?.message} />
    </form>
  );
}
