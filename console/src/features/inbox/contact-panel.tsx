import { useMutation, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useEffect, useState } from "react";
import { contactLabel, fullTime } from "../../lib/format";
import type { Contact, Conversation } from "../../lib/types";
import { FormError, ICONS, Icon } from "../../lib/ui";
import { contactKeys, updateContact } from "../contacts/api";
import { inboxKeys } from "./api";

export function ContactPanel(props: {
  contact: Contact;
  conversation: Conversation;
  open: boolean;
  onClose: () => void;
}) {
  const client = useQueryClient();
  const [tag, setTag] = useState("");
  const [name, setName] = useState(props.contact.name ?? "");
  const [attrKey, setAttrKey] = useState("");
  const [attrValue, setAttrValue] = useState("");
  // Another agent's rename shows here when this field is not being edited.
  const [editingName, setEditingName] = useState(false);
  // Shown as clicked at once; the stored value (and another agent's change) follows.
  const [optedOut, setOptedOut] = useState(props.contact.opted_out === true);
  useEffect(() => setOptedOut(props.contact.opted_out === true), [props.contact.opted_out]);
  if (!editingName && (props.contact.name ?? "") !== name) setName(props.contact.name ?? "");
  const refresh = () => {
    void client.invalidateQueries({ queryKey: inboxKeys.conversation(props.conversation.id) });
    void client.invalidateQueries({ queryKey: inboxKeys.conversations });
    void client.invalidateQueries({ queryKey: contactKeys.all });
  };
  const save = useMutation({
    mutationFn: (patch: Parameters<typeof updateContact>[1]) => updateContact(props.contact.id, patch),
    onSuccess: (_answer, patch) => {
      if (patch.tags) setTag("");
      if (patch.attributes) {
        setAttrKey("");
        setAttrValue("");
      }
      if (patch.name !== undefined) setEditingName(false);
      refresh();
    },
  });
  const saveTags = { mutate: (tags: string[]) => save.mutate({ tags }) };
  const attributes = props.contact.attributes ?? {};
  const saveName = (e: FormEvent) => {
    e.preventDefault();
    save.mutate({ name: name.trim() || null });
  };
  const addAttribute = (e: FormEvent) => {
    e.preventDefault();
    if (attrKey.trim()) save.mutate({ attributes: { ...attributes, [attrKey.trim()]: attrValue } });
  };
  const removeAttribute = (key: string) => {
    const { [key]: _gone, ...rest } = attributes;
    save.mutate({ attributes: rest });
  };
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
      <form className="inline-form" onSubmit={saveName}>
        <input
          aria-label="Contact name"
          placeholder="Name"
          value={name}
          onFocus={() => setEditingName(true)}
          onChange={(e) => setName(e.target.value)}
        />
        <button type="submit" className="btn btn-small" disabled={name === (props.contact.name ?? "")}>
          Save
        </button>
      </form>
      <label className="check-row">
        <input
          type="checkbox"
          checked={optedOut}
          onChange={(e) => {
            setOptedOut(e.target.checked);
            save.mutate({ opted_out: e.target.checked });
          }}
        />
        Opted out (agents and campaigns send nothing)
      </label>
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
      <h3>Attributes</h3>
      <dl className="attribute-list" aria-label="Attributes">
        {Object.keys(attributes).length === 0 ? <p className="muted">No attributes</p> : null}
        {Object.entries(attributes).map(([key, value]) => (
          <div key={key} className="attribute-row">
            <dt>{key}</dt>
            <dd>{value}</dd>
            <button
              type="button"
              className="tag-remove"
              aria-label={`Remove attribute ${key}`}
              onClick={() => removeAttribute(key)}
            >
              <Icon d={ICONS.close} size={14} />
            </button>
          </div>
        ))}
      </dl>
      <form className="inline-form attribute-form" onSubmit={addAttribute}>
        <input
          aria-label="Attribute name"
          placeholder="name"
          value={attrKey}
          onChange={(e) => setAttrKey(e.target.value)}
        />
        <input
          aria-label="Attribute value"
          placeholder="value"
          value={attrValue}
          onChange={(e) => setAttrValue(e.target.value)}
        />
        <button type="submit" className="btn btn-small">
          Set
        </button>
      </form>
      <FormError error={save.error?.message} />
    </aside>
  );
}
