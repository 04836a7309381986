import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useEffect, useRef, useState } from "react";
import { errorText } from "../../lib/api";
import { contactLabel, fullTime } from "../../lib/format";
import type { Contact, Conversation } from "../../lib/types";
import { FormError, ICONS, Icon } from "../../lib/ui";
import {
  type AttributeDefinition,
  contactKeys,
  fetchAttributeDefinitions,
  updateContact,
} from "../contacts/api";
import { inboxKeys } from "./api";

/**
 * One defined attribute, edited as its type asks: a text box, a number box, a
 * date picker, a yes/no switch or the list's options. A changed value is saved
 * when the field is left (or at once for the switch and the list); an empty one
 * removes the attribute.
 */
function AttributeField(props: {
  definition: AttributeDefinition;
  value: string | undefined;
  onSave: (value: string | undefined) => void;
}) {
  const { definition, value } = props;
  const [draft, setDraft] = useState(value ?? "");
  const [editing, setEditing] = useState(false);
  // The switch and the list show a choice at once; the stored value (or another agent's) follows.
  const [chosen, setChosen] = useState(value ?? "");
  useEffect(() => setChosen(value ?? ""), [value]);
  const choose = (next: string) => {
    setChosen(next);
    props.onSave(next === "" ? undefined : next);
  };
  // The stored value (and another agent's change) shows when the field is not being edited.
  if (!editing && (value ?? "") !== draft) setDraft(value ?? "");
  const commit = () => {
    setEditing(false);
    const next = draft.trim();
    if (next !== (value ?? "")) props.onSave(next === "" ? undefined : next);
  };
  const id = `attribute-${definition.key}`;
  const label = (
    <label htmlFor={id} className="attribute-label">
      {definition.label}
    </label>
  );
  if (definition.type === "boolean")
    return (
      <div className="attribute-field attribute-field-check">
        <input
          id={id}
          type="checkbox"
          checked={chosen === "true"}
          onChange={(e) => choose(e.target.checked ? "true" : "false")}
        />
        {label}
      </div>
    );
  if (definition.type === "list")
    return (
      <div className="attribute-field">
        {label}
        <select id={id} value={chosen} onChange={(e) => choose(e.target.value)}>
          <option value="">—</option>
          {(definition.options ?? []).map((o) => (
            <option key={o} value={o}>
              {o}
            </option>
          ))}
        </select>
      </div>
    );
  return (
    <div className="attribute-field">
      {label}
      <input
        id={id}
        type={definition.type === "number" ? "number" : definition.type === "date" ? "date" : "text"}
        step={definition.type === "number" ? "any" : undefined}
        value={draft}
        onFocus={() => setEditing(true)}
        onChange={(e) => {
          setEditing(true);
          setDraft(e.target.value);
        }}
        onBlur={commit}
        onKeyDown={(e) => {
          if (e.key === "Enter") {
            e.preventDefault();
            commit();
          }
        }}
      />
    </div>
  );
}

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
  // The attributes as this panel last saved them, until the stored contact comes back: a field
  // changed before the last save's refetch arrived builds on it, so no change is lost.
  const savedAttributes = useRef<Record<string, string> | null>(null);
  const saveKey = ["contact-save", props.contact.id];
  // biome-ignore lint/correctness/useExhaustiveDependencies: it runs when the stored attributes come back
  useEffect(() => {
    if (client.isMutating({ mutationKey: saveKey }) === 0) savedAttributes.current = null;
  }, [props.contact.attributes]);
  const save = useMutation({
    mutationKey: saveKey,
    // One contact's saves go one after the other, in the order they were made.
    scope: { id: `contact-${props.contact.id}` },
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
  // Read when a save is made, not when the panel was drawn: an earlier save may not be drawn yet.
  const currentAttributes = () => savedAttributes.current ?? props.contact.attributes ?? {};
  const attributes = currentAttributes();
  const saveAttributes = (next: Record<string, string>) => {
    savedAttributes.current = next;
    save.mutate({ attributes: next });
  };
  const definitions = useQuery({
    queryKey: contactKeys.attributes,
    queryFn: fetchAttributeDefinitions,
  });
  const defined = definitions.data ?? [];
  const definedKeys = new Set(defined.map((d) => d.key));
  const freeAttributes = Object.entries(attributes).filter(([key]) => !definedKeys.has(key));
  const saveAttribute = (key: string, value: string | undefined) => {
    const { [key]: _old, ...rest } = currentAttributes();
    saveAttributes(value === undefined ? rest : { ...rest, [key]: value });
  };
  const saveName = (e: FormEvent) => {
    e.preventDefault();
    save.mutate({ name: name.trim() || null });
  };
  const addAttribute = (e: FormEvent) => {
    e.preventDefault();
    if (attrKey.trim()) saveAttributes({ ...currentAttributes(), [attrKey.trim()]: attrValue });
  };
  const removeAttribute = (key: string) => {
    const { [key]: _gone, ...rest } = currentAttributes();
    saveAttributes(rest);
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
      {defined.length ? (
        <fieldset className="attribute-fields" aria-label="Defined attributes">
          {defined.map((d) => (
            <AttributeField
              key={d.key}
              definition={d}
              value={attributes[d.key]}
              onSave={(value) => saveAttribute(d.key, value)}
            />
          ))}
        </fieldset>
      ) : null}
      <dl className="attribute-list" aria-label="Attributes">
        {freeAttributes.length === 0 && defined.length === 0 ? <p className="muted">No attributes</p> : null}
        {freeAttributes.map(([key, value]) => (
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
      <FormError error={save.error ? errorText(save.error) : undefined} />
    </aside>
  );
}
