import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { Link } from "wouter";
import { Empty, FormError, PageHeader, Spinner } from "../../lib/ui";
import {
  contactAddress,
  contactKeys,
  contactName,
  contactsCsvUrl,
  fetchAttributeDefinitions,
  fetchContacts,
  filterParams,
} from "./api";

export function ContactsPage() {
  const [q, setQ] = useState("");
  const [tag, setTag] = useState("");
  const [optedOut, setOptedOut] = useState("");
  const [attribute, setAttribute] = useState("");
  const [value, setValue] = useState("");
  const filters = { q, tag, optedOut, attribute, value };
  const params = filterParams(filters);
  const definitions = useQuery({
    queryKey: contactKeys.attributes,
    queryFn: fetchAttributeDefinitions,
  });
  const contacts = useQuery({
    queryKey: contactKeys.list(params.toString()),
    queryFn: async () => {
      const query = new URLSearchParams(params);
      query.set("limit", "100");
      return fetchContacts(query);
    },
    placeholderData: (previous) => previous,
  });
  return (
    <div className="page">
      <PageHeader
        title="Contacts"
        subtitle="Your customers: everyone who wrote to your number, and those you added or imported."
        actions={
          <>
            <Link href="/contacts/import" className="btn">
              Import CSV
            </Link>
            <a className="btn" href={contactsCsvUrl(params)} download>
              Export CSV
            </a>
          </>
        }
      />
      <div className="filters">
        <input
          type="search"
          className="search"
          aria-label="Search contacts"
          placeholder="Name, phone or username"
          value={q}
          onChange={(e) => setQ(e.target.value)}
        />
        <input
          className="search"
          aria-label="Filter by tag"
          placeholder="Tag"
          value={tag}
          onChange={(e) => setTag(e.target.value)}
        />
        <select aria-label="Filter by consent" value={optedOut} onChange={(e) => setOptedOut(e.target.value)}>
          <option value="">Any consent</option>
          <option value="false">Subscribed</option>
          <option value="true">Opted out</option>
        </select>
        <select
          aria-label="Filter by attribute"
          value={attribute}
          onChange={(e) => setAttribute(e.target.value)}
        >
          <option value="">Any attribute</option>
          {(definitions.data ?? []).map((d) => (
            <option key={d.key} value={d.key}>
              {d.label}
            </option>
          ))}
        </select>
        {attribute ? (
          <input
            className="search"
            aria-label="Attribute value"
            placeholder="Value (any)"
            value={value}
            onChange={(e) => setValue(e.target.value)}
          />
        ) : null}
      </div>
      {contacts.isPending ? (
        <Spinner />
      ) : contacts.isError ? (
        <FormError error={contacts.error.message} />
      ) : !contacts.data?.length ? (
        <Empty title="No contacts found" />
      ) : (
        <div className="table-wrap">
          <table className="table">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Phone</th>
                <th scope="col">Tags</th>
                <th scope="col">Consent</th>
                <th scope="col">
                  <span className="sr-only">Conversation</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {contacts.data.map((c) => (
                <tr key={c.id}>
                  <td>
                    <Link href={`/contacts/${c.id}`}>{contactName(c)}</Link>
                  </td>
                  <td>{contactAddress(c)}</td>
                  <td>
                    {c.tags.map((t) => (
                      <span key={t} className="tag">
                        {t}
                      </span>
                    ))}
                  </td>
                  <td>{c.opted_out ? "Opted out" : c.opted_in_at ? "Opted in" : ""}</td>
                  <td>
                    {c.conversation_id ? (
                      <Link href={`/inbox/${c.conversation_id}`}>Open conversation</Link>
                    ) : null}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
