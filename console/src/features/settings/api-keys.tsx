import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { fullTime, shortTime } from "../../lib/format";
import { CopyField, Empty, Field, FormError, formErrors, Spinner } from "../../lib/ui";
import { createApiKey, fetchApiKeys, revokeApiKey, settingsKeys } from "./api";

export function ApiKeysSettings() {
  const client = useQueryClient();
  const keys = useQuery({
    queryKey: settingsKeys.apiKeys,
    queryFn: fetchApiKeys,
  });
  const [name, setName] = useState("");
  const [days, setDays] = useState("");
  const create = useMutation({
    mutationFn: () => createApiKey({ name, ...(days ? { expires_in_days: Number(days) } : {}) }),
    onSuccess: () => {
      setName("");
      setDays("");
      void client.invalidateQueries({ queryKey: settingsKeys.apiKeys });
    },
  });
  const revoke = useMutation({
    mutationFn: revokeApiKey,
    onSuccess: () => void client.invalidateQueries({ queryKey: settingsKeys.apiKeys }),
  });
  if (keys.isPending) return <Spinner />;
  if (keys.isError) return <FormError error={keys.error.message} />;
  const errors = formErrors(create.error, ["name", "expires_in_days"]);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  return (
    <div className="settings-section">
      <section className="card">
        <h2>New API key</h2>
        <p className="muted">
          A key acts for this account with member rights. Send it as <code>Authorization: Bearer</code> or{" "}
          <code>X-API-Key</code>.
        </p>
        <form className="form form-grid" onSubmit={submit} noValidate>
          <Field label="Name" error={errors.name === "name" ? errors.field : undefined}>
            {(f) => (
              <input
                id={f.id}
                value={name}
                onChange={(e) => setName(e.target.value)}
                aria-invalid={f.invalid}
                aria-describedby={f.describedBy}
              />
            )}
          </Field>
          <Field
            label="Expires after (days)"
            hint="Empty: never"
            error={errors.name === "expires_in_days" ? errors.field : undefined}
          >
            {(f) => (
              <input
                id={f.id}
                inputMode="numeric"
                value={days}
                onChange={(e) => setDays(e.target.value)}
                aria-invalid={f.invalid}
                aria-describedby={f.describedBy}
              />
            )}
          </Field>
          <div className="form-actions">
            <FormError error={errors.form} />
            <button type="submit" className="btn btn-primary" disabled={create.isPending}>
              Create key
            </button>
          </div>
        </form>
        {create.data ? (
          <div className="secret-box" role="status">
            <p>Copy the key now: it is not shown again.</p>
            <CopyField label="New API key" value={create.data.key} />
          </div>
        ) : null}
      </section>
      <section className="card">
        <h2>Keys</h2>
        {!keys.data?.length ? (
          <Empty title="No keys" />
        ) : (
          <ul className="item-list">
            {keys.data.map((k) => (
              <li key={k.id}>
                <div>
                  <strong>{k.name}</strong> <code>{k.prefix}…</code>
                  <p className="muted">
                    Created {shortTime(k.created_at)} ·{" "}
                    {k.expires_at ? `expires ${fullTime(k.expires_at)}` : "never expires"} ·{" "}
                    {k.last_used_at ? `last used ${shortTime(k.last_used_at)}` : "never used"}
                  </p>
                </div>
                <button
                  type="button"
                  className="btn btn-small btn-danger"
                  onClick={() => revoke.mutate(k.id)}
                  aria-label={`Revoke ${k.name}`}
                >
                  Revoke
                </button>
              </li>
            ))}
          </ul>
        )}
      </section>
    </div>
  );
}
