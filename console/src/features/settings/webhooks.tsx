import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { EVENT_TYPES } from "../../../../src/events/types.js";
import { shortTime } from "../../lib/format";
import type { WebhookEndpoint } from "../../lib/types";
import { Badge, CopyField, Empty, Field, FormError, formErrors, Spinner } from "../../lib/ui";
import {
  createWebhookEndpoint,
  deleteWebhookEndpoint,
  fetchWebhookDeliveries,
  fetchWebhookEndpoints,
  settingsKeys,
  setWebhookEndpointEnabled,
  testWebhookEndpoint,
} from "./api";

function Deliveries({ endpoint }: { endpoint: WebhookEndpoint }) {
  const deliveries = useQuery({
    queryKey: settingsKeys.webhookDeliveries(endpoint.id),
    queryFn: () => fetchWebhookDeliveries(endpoint.id),
  });
  if (deliveries.isPending) return <Spinner />;
  if (!deliveries.data?.length) return <p className="muted">No deliveries yet.</p>;
  return (
    <ul className="delivery-list" aria-label={`Deliveries to ${endpoint.url}`}>
      {deliveries.data.map((d) => (
        <li key={d.id}>
          <Badge tone={d.status === "delivered" ? "ok" : d.status === "failed" ? "bad" : "neutral"}>
            {d.status}
          </Badge>
          <span>{d.event_type}</span>
          <span className="muted">
            {d.response_status ? `HTTP ${d.response_status}` : (d.error ?? "")}
            {d.attempt > 1 ? ` · attempt ${d.attempt}` : ""}
          </span>
          <span className="muted">{shortTime(d.created_at)}</span>
        </li>
      ))}
    </ul>
  );
}

export function WebhookSettings() {
  const client = useQueryClient();
  const endpoints = useQuery({
    queryKey: settingsKeys.webhookEndpoints,
    queryFn: fetchWebhookEndpoints,
  });
  const [url, setUrl] = useState("");
  const [events, setEvents] = useState<string[]>(["*"]);
  const [open, setOpen] = useState<string | null>(null);
  const refresh = () => void client.invalidateQueries({ queryKey: settingsKeys.webhookEndpoints });
  const create = useMutation({
    mutationFn: () => createWebhookEndpoint({ url, events }),
    onSuccess: () => {
      setUrl("");
      refresh();
    },
  });
  const toggle = useMutation({
    mutationFn: (e: WebhookEndpoint) => setWebhookEndpointEnabled(e.id, !e.enabled),
    onSuccess: refresh,
  });
  const remove = useMutation({
    mutationFn: deleteWebhookEndpoint,
    onSuccess: refresh,
  });
  const test = useMutation({
    mutationFn: testWebhookEndpoint,
    onSuccess: (_r, id) => {
      setOpen(id);
      void client.invalidateQueries({ queryKey: settingsKeys.webhookDeliveries(id) });
    },
  });
  if (endpoints.isPending) return <Spinner />;
  if (endpoints.isError) return <FormError error={endpoints.error.message} />;
  const errors = formErrors(create.error, ["url", "events"]);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  const all = events.includes("*");
  return (
    <div className="settings-section">
      <section className="card">
        <h2>New endpoint</h2>
        <form className="form" onSubmit={submit} noValidate>
          <Field
            label="URL"
            hint="https, reachable from this server"
            error={errors.name === "url" ? errors.field : undefined}
          >
            {(f) => (
              <input
                id={f.id}
                type="url"
                value={url}
                onChange={(e) => setUrl(e.target.value)}
                aria-invalid={f.invalid}
                aria-describedby={f.describedBy}
              />
            )}
          </Field>
          <fieldset className="checks">
            <legend>Events</legend>
            <label>
              <input
                type="checkbox"
                checked={all}
                onChange={(e) => setEvents(e.target.checked ? ["*"] : [])}
              />{" "}
              All events
            </label>
            {EVENT_TYPES.map((t) => (
              <label key={t}>
                <input
                  type="checkbox"
                  disabled={all}
                  checked={all || events.includes(t)}
                  onChange={(e) =>
                    setEvents((list) => (e.target.checked ? [...list, t] : list.filter((x) => x !== t)))
                  }
                />{" "}
                {t}
              </label>
            ))}
          </fieldset>
          {errors.name === "events" ? <p className="field-error">{errors.field}</p> : null}
          <FormError error={errors.form} />
          <button type="submit" className="btn btn-primary" disabled={create.isPending}>
            Add endpoint
          </button>
        </form>
        {create.data ? (
          <div className="secret-box" role="status">
            <p>The signing secret, shown once:</p>
            <CopyField label="Signing secret" value={create.data.secret} />
          </div>
        ) : null}
      </section>
      <section className="card">
        <h2>Endpoints</h2>
        {!endpoints.data?.length ? (
          <Empty title="No endpoints" />
        ) : (
          <ul className="item-list">
            {endpoints.data.map((e) => (
              <li key={e.id} className="item-stack">
                <div className="item-row">
                  <div>
                    <strong className="clip">{e.url}</strong>
                    <p className="muted">{e.events.join(", ")}</p>
                    {e.disabled_reason ? (
                      <p className="field-error">Turned off by the service: {e.disabled_reason}</p>
                    ) : e.failing_since ? (
                      <p className="field-error">Failing since {shortTime(e.failing_since)}</p>
                    ) : null}
                  </div>
                  <Badge tone={e.enabled ? "ok" : "muted"}>{e.enabled ? "enabled" : "disabled"}</Badge>
                  <div className="row-actions">
                    <button
                      type="button"
                      className="btn btn-small"
                      onClick={() => setOpen(open === e.id ? null : e.id)}
                      aria-expanded={open === e.id}
                    >
                      Deliveries
                    </button>
                    <button type="button" className="btn btn-small" onClick={() => test.mutate(e.id)}>
                      Send test
                    </button>
                    <button type="button" className="btn btn-small" onClick={() => toggle.mutate(e)}>
                      {e.enabled ? "Disable" : "Enable"}
                    </button>
                    <button
                      type="button"
                      className="btn btn-small btn-danger"
                      onClick={() => remove.mutate(e.id)}
                      aria-label={`Delete ${e.url}`}
                    >
                      Delete
                    </button>
                  </div>
                </div>
                {open === e.id ? <Deliveries endpoint={e} /> : null}
              </li>
            ))}
          </ul>
        )}
        <FormError error={(toggle.error ?? remove.error ?? test.error)?.message} />
      </section>
    </div>
  );
}
