import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { Link, useLocation, useParams } from "wouter";
import { errorText } from "../../lib/api";
import { fullTime } from "../../lib/format";
import { FormError, PageHeader, Spinner } from "../../lib/ui";
import {
  type AttributeDefinition,
  contactAddress,
  contactKeys,
  contactName,
  deleteContact,
  fetchAttributeDefinitions,
  fetchContact,
} from "./api";

/** An attribute's value as its type reads best. */
function shownValue(value: string, definition: AttributeDefinition | undefined) {
  if (!definition) return value;
  if (definition.type === "boolean") return value === "true" ? "Yes" : "No";
  if (definition.type === "date") {
    const date = new Date(`${value}T00:00:00Z`);
    return Number.isNaN(date.getTime()) ? value : date.toLocaleDateString(undefined, { timeZone: "UTC" });
  }
  if (definition.type === "number") return Number(value).toLocaleString();
  return value;
}

export function ContactPage() {
  const { id } = useParams<{ id: string }>();
  const [, navigate] = useLocation();
  const client = useQueryClient();
  const [confirming, setConfirming] = useState(false);
  const contact = useQuery({
    queryKey: contactKeys.contact(id),
    queryFn: () => fetchContact(id),
  });
  const definitions = useQuery({
    queryKey: contactKeys.attributes,
    queryFn: fetchAttributeDefinitions,
  });
  const erase = useMutation({
    mutationFn: () => deleteContact(id),
    onSuccess: () => {
      client.removeQueries({ queryKey: contactKeys.contact(id) });
      void client.invalidateQueries({ queryKey: contactKeys.all });
      navigate("/contacts", { replace: true });
    },
  });
  if (contact.isPending) return <Spinner />;
  if (contact.isError)
    return (
      <div className="page">
        <FormError error={errorText(contact.error)} />
      </div>
    );
  const c = contact.data;
  const byKey = new Map((definitions.data ?? []).map((d) => [d.key, d]));
  const keys = [...new Set([...(definitions.data ?? []).map((d) => d.key), ...Object.keys(c.attributes)])];
  return (
    <div className="page">
      <PageHeader
        title={contactName(c)}
        subtitle={<Link href="/contacts">All contacts</Link>}
        actions={
          c.conversation_id ? (
            <Link href={`/inbox/${c.conversation_id}`} className="btn">
              Open conversation
            </Link>
          ) : null
        }
      />
      <section className="card" aria-label="Identity">
        <dl className="item-stack">
          <dt>Phone</dt>
          <dd>{contactAddress(c)}</dd>
          {c.username ? (
            <>
              <dt>WhatsApp username</dt>
              <dd>@{c.username}</dd>
            </>
          ) : null}
          <dt>Tags</dt>
          <dd>
            {c.tags.length
              ? c.tags.map((t) => (
                  <span key={t} className="tag">
                    {t}
                  </span>
                ))
              : "—"}
          </dd>
        </dl>
      </section>
      <section className="card" aria-label="Consent">
        <h2>Consent</h2>
        <p>
          {c.opted_out
            ? `Opted out${c.opted_out_at ? ` on ${fullTime(c.opted_out_at)}` : ""}: no messages from agents or bots.`
            : c.opted_in_at
              ? `Opted in on ${fullTime(c.opted_in_at)}${c.opt_in_source ? ` (${c.opt_in_source})` : ""}.`
              : "No consent recorded."}
        </p>
      </section>
      <section className="card" aria-label="Attributes">
        <h2>Attributes</h2>
        {keys.length === 0 ? (
          <p className="muted">No attributes.</p>
        ) : (
          <table className="table">
            <tbody>
              {keys.map((key) => (
                <tr key={key}>
                  <th scope="row">{byKey.get(key)?.label ?? key}</th>
                  <td>
                    {c.attributes[key] === undefined ? "—" : shownValue(c.attributes[key], byKey.get(key))}
                  </td>
                  <td className="muted">{byKey.get(key)?.type ?? "text"}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
      <section className="card" aria-label="Erase">
        <h2>Erase this contact</h2>
        <p className="muted">
          Deletes the contact, the conversation, every message and file, and the bot runs. This cannot be
          undone.
        </p>
        {confirming ? (
          <div className="form-actions-row">
            <button
              type="button"
              className="btn btn-danger"
              disabled={erase.isPending}
              onClick={() => erase.mutate()}
            >
              Yes, erase {contactName(c)}
            </button>
            <button type="button" className="btn" onClick={() => setConfirming(false)}>
              Cancel
            </button>
          </div>
        ) : (
          <button type="button" className="btn btn-danger" onClick={() => setConfirming(true)}>
            Erase contact
          </button>
        )}
        <FormError error={erase.error ? errorText(erase.error) : undefined} />
      </section>
    </div>
  );
}
