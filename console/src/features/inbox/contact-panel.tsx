import { useMutation, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { api } from "../../lib/api";
import { contactLabel, fullTime } from "../../lib/format";
import type { Contact, Conversation } from "../../lib/types";
import { FormError, ICONS, Icon } from "../../lib/ui";

export function ContactPanel(props: {
  contact: Contact;
  conversation: Conversation;
  open: boolean;
  onClose: () => void;
}) {
  const client = useQueryClient();
  const [tag, setTag] = useState("");
  const saveTags = useMutation({
    mutationFn: (tags: string[]) =>
      api(`/api/contacts/${props.contact.id}`, { method: "PATCH", body: { tags } }),
    onSuccess: () => {
      setTag("");
      void client.invalidateQueries({ queryKey: ["conversations"] });
      void client.invalidateQueries({ queryKey: ["contacts"] });
    },
  });
  const tags = props.contact.tags ?? [];
  const add = (e: FormEvent) => {
    e.preventDefault();
    const value = tag.trim();
    if (value && !tags.includes(value)) saveTags.mutate([...tags, value]);
  };
  return (
    <aside id="contact-panel" className={`contact-panel${props.open ? " open" : ""}`} aria-label="Contact">
      <div className="contact-panel-head">
        <h2>{contactLabel(props.contact)}</h2>
        <button
          type="button"
          className="icon-btn panel-close"
          aria-label="Close contact panel"
          onClick={props.onClose}
        >
          <Icon d={ICONS.close} size={18} />
        </button>
      </div>
      <dl className="facts">
        <dt>Phone</dt>
        <dd>{props.contact.phone ? `+${props.contact.phone}` : "—"}</dd>
        <dt>WhatsApp id</dt>
        <dd>{props.contact.wa_id ?? "—"}</dd>
        <dt>Conversation since</dt>
        <dd>{fullTime(props.conversation.created_at)}</dd>
      </dl>
      <h3>Tags</h3>
      <ul className="tag-list" aria-label="Tags">
        {tags.length === 0 ? <li className="muted">No tags</li> : null}
        {tags.map((t) => (
          <li key={t} className="tag">
            {t}
            <button
              type="button"
              className="tag-remove"
              aria-label={`Remove tag ${t}`}
              onClick={() => saveTags.mutate(tags.filter((x) => x !== t))}
            >
              <Icon d={ICONS.close} size={14} />
            </button>
          </li>
        ))}
      </ul>
      <form className="inline-form" onSubmit={add}>
        <input
          aria-label="New tag"
          placeholder="Add a tag"
          value={tag}
          onChange={(e) => setTag(e.target.value)}
        />
        <button type="submit" className="btn btn-small">
          Add
        </button>
      </form>
      <FormError error={saveTags.error?.message} />
    </aside>
  );
}
