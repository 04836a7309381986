import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { Link } from "wouter";
import { api, listOf } from "../../lib/api";
import { contactLabel } from "../../lib/format";
import type { Contact } from "../../lib/types";
import { Empty, FormError, PageHeader, Spinner } from "../../lib/ui";

export function ContactsPage() {
  const [q, setQ] = useState("");
  const [tag, setTag] = useState("");
  const contacts = useQuery({
    queryKey: ["contacts", q, tag],
    queryFn: async () => {
      const params = new URLSearchParams({ limit: "100" });
      if (q.trim()) params.set("q", q.trim());
      if (tag.trim()) params.set("tag", tag.trim());
      return listOf<Contact>(await api(`/api/contacts?${params}`), "contacts");
    },
    placeholderData: (previous) => previous,
  });
  return (
    <div className="page">
      <PageHeader title="Contacts" subtitle="Everyone who wrote to your number." />
      <div className="filters">
        <input
          type="search"
          className="search"
          aria-label="Search contacts"
          placeholder="Name or phone"
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
                <th scope="col">
                  <span className="sr-only">Conversation</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {contacts.data.map((c) => (
                <tr key={c.id}>
                  <td>{contactLabel(c)}</td>
                  <td>{c.phone ? `+${c.phone}` : "—"}</td>
                  <td>
                    {c.tags.map((t) => (
                      <span key={t} className="tag">
                        {t}
                      </span>
                    ))}
                  </td>
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
