import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { shortTime, templateComponent } from "../../lib/format";
import { Badge, Empty, FormError, Spinner } from "../../lib/ui";
import { inboxKeys, syncTemplates, useTemplates } from "../inbox/api";

export function TemplateSettings() {
  const client = useQueryClient();
  const [q, setQ] = useState("");
  const templates = useTemplates();
  const sync = useMutation({
    mutationFn: syncTemplates,
    onSuccess: () => void client.invalidateQueries({ queryKey: inboxKeys.templates }),
  });
  if (templates.isPending) return <Spinner />;
  if (templates.isError) return <FormError error={templates.error.message} />;
  const list = (templates.data ?? []).filter((t) => t.name.includes(q.trim().toLowerCase()));
  return (
    <section className="card">
      <div className="card-head">
        <h2>Message templates</h2>
        <button
          type="button"
          className="btn btn-small"
          onClick={() => sync.mutate()}
          disabled={sync.isPending}
        >
          {sync.isPending ? "Syncing…" : "Sync from Meta"}
        </button>
      </div>
      <p className="muted">
        Approved templates are the only messages WhatsApp lets you send after 24 hours of silence.
      </p>
      {sync.data ? (
        <p className="form-notice" role="status">
          Synced {sync.data.synced} templates.
        </p>
      ) : null}
      <FormError error={sync.error?.message} />
      <input
        type="search"
        className="search"
        aria-label="Filter templates"
        placeholder="Filter by name"
        value={q}
        onChange={(e) => setQ(e.target.value)}
      />
      {list.length === 0 ? (
        <Empty title="No templates">Sync to fetch your business account's templates from Meta.</Empty>
      ) : (
        <div className="table-wrap">
          <table className="table">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Language</th>
                <th scope="col">Category</th>
                <th scope="col">Status</th>
                <th scope="col">Body</th>
                <th scope="col">Updated</th>
              </tr>
            </thead>
            <tbody>
              {list.map((t) => (
                <tr key={t.id}>
                  <td>{t.name}</td>
                  <td data-label="Language">{t.language}</td>
                  <td data-label="Category">{t.category}</td>
                  <td>
                    <Badge
                      tone={t.status === "APPROVED" ? "ok" : t.status === "REJECTED" ? "bad" : "neutral"}
                    >
                      {t.status}
                    </Badge>
                  </td>
                  <td className="clip">{templateComponent(t, "BODY")?.text}</td>
                  <td data-label="Updated">{shortTime(t.updated_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
