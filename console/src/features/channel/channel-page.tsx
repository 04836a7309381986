import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { fullTime } from "../../lib/format";
import { Badge, CopyField, Field, FormError, formErrors, PageHeader, Spinner } from "../../lib/ui";
import {
  channelKeys,
  deleteChannelConfig,
  fetchChannelHealth,
  saveChannelConfig,
  webhookCallbackUrl,
} from "./api";

const REASONS: Record<string, string> = {
  no_config: "No WhatsApp number is connected yet.",
  meta_api_error: "Meta refused the stored credentials.",
  token_corrupted: "The stored access token can no longer be read (the server's encryption key changed).",
  db_error: "The configuration could not be read from the database.",
  no_account: "Your login is not part of an account.",
};

/** A field of Meta's answer about the number (the document passes it through unchecked), when it is text. */
const stringField = (value: unknown) => (typeof value === "string" ? value : undefined);

const FIELDS = ["phone_number_id", "business_account_id", "access_token", "verify_token", "pin"] as const;

export function ChannelPage() {
  const client = useQueryClient();
  const health = useQuery({
    queryKey: channelKeys.health,
    queryFn: fetchChannelHealth,
  });
  const [form, setForm] = useState<Record<(typeof FIELDS)[number], string>>({
    phone_number_id: "",
    business_account_id: "",
    access_token: "",
    verify_token: "",
    pin: "",
  });
  const [notice, setNotice] = useState<string | null>(null);
  const save = useMutation({
    mutationFn: () => {
      const body: Record<string, string> = {};
      for (const key of FIELDS) if (form[key].trim()) body[key] = form[key].trim();
      return saveChannelConfig(body);
    },
    onSuccess: (result) => {
      setNotice(
        result.success
          ? result.registration_skipped
            ? "Saved. Registration was skipped (no PIN): the number must already be registered."
            : "Connected. The number is registered and ready."
          : `Saved, but registration failed: ${result.registration_error}. Save again with the right PIN.`,
      );
      setForm((f) => ({ ...f, access_token: "", pin: "" }));
      void client.invalidateQueries({ queryKey: channelKeys.health });
    },
  });
  const reset = useMutation({
    mutationFn: deleteChannelConfig,
    onSuccess: () => {
      setNotice("The configuration was removed. Connect the number again below.");
      void client.invalidateQueries({ queryKey: channelKeys.health });
    },
  });
  const errors = formErrors(save.error, FIELDS);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setNotice(null);
    save.mutate();
  };
  const h = health.data;
  const set = (key: (typeof FIELDS)[number]) => (e: React.ChangeEvent<HTMLInputElement>) =>
    setForm((f) => ({ ...f, [key]: e.target.value }));
  const fieldError = (key: string) => (errors.name === key ? errors.field : undefined);

  return (
    <div className="page page-narrow">
      <PageHeader title="WhatsApp channel" subtitle="The business number your customers write to." />
      <section className="card" aria-labelledby="health-title">
        <div className="card-head">
          <h2 id="health-title">Health</h2>
          <button
            type="button"
            className="btn btn-small"
            onClick={() => health.refetch()}
            disabled={health.isFetching}
          >
            {health.isFetching ? "Checking…" : "Check again"}
          </button>
        </div>
        {health.isPending ? (
          <Spinner label="Checking with Meta" />
        ) : h ? (
          <div className="health">
            <div className="health-status">
              {h.connected ? <Badge tone="ok">Connected</Badge> : <Badge tone="bad">Not connected</Badge>}
              {h.phone_info ? (
                <span className="health-number">
                  {stringField(h.phone_info.display_phone_number) ?? h.phone_info.id}
                  {stringField(h.phone_info.verified_name)
                    ? ` · ${stringField(h.phone_info.verified_name)}`
                    : ""}
                </span>
              ) : null}
            </div>
            {!h.connected ? (
              <p className="health-reason">
                {REASONS[h.reason ?? ""] ?? "The channel does not work."}{" "}
                <span className="muted">{h.message}</span>
              </p>
            ) : null}
            {h.config ? (
              <dl className="facts">
                <dt>Phone number id</dt>
                <dd>{h.config.phone_number_id}</dd>
                <dt>Business account id</dt>
                <dd>{h.config.business_account_id ?? "—"}</dd>
                <dt>Quality rating</dt>
                <dd>{stringField(h.phone_info?.quality_rating) ?? "—"}</dd>
                <dt>Registered</dt>
                <dd>{h.config.registered_at ? fullTime(h.config.registered_at) : "not yet"}</dd>
                <dt>Webhooks subscribed</dt>
                <dd>{h.config.subscribed_apps_at ? fullTime(h.config.subscribed_apps_at) : "not yet"}</dd>
                {h.config.last_registration_error ? (
                  <>
                    <dt>Last registration error</dt>
                    <dd>{h.config.last_registration_error}</dd>
                  </>
                ) : null}
              </dl>
            ) : null}
            {h.config || h.needs_reset ? (
              <div className="danger-zone">
                <p>
                  Reset removes the stored configuration (and its encrypted tokens). Use it when the token can
                  no longer be read, or to connect a different number.
                </p>
                <button
                  type="button"
                  className="btn btn-danger"
                  onClick={() => {
                    if (window.confirm("Remove the channel configuration?")) reset.mutate();
                  }}
                  disabled={reset.isPending}
                >
                  Reset channel
                </button>
                <FormError error={reset.error?.message} />
              </div>
            ) : null}
          </div>
        ) : (
          <FormError error={health.error?.message} />
        )}
      </section>

      <section className="card" aria-labelledby="callback-title">
        <h2 id="callback-title">Webhook for Meta</h2>
        <p className="muted">
          In your Meta app, WhatsApp → Configuration → Webhook: paste this callback URL, the verify token you
          set below, and subscribe to the <code>messages</code> field.
        </p>
        <CopyField label="Callback URL" value={webhookCallbackUrl(window.location.origin)} />
      </section>

      <section className="card" aria-labelledby="connect-title">
        <h2 id="connect-title">{h?.config ? "Update the connection" : "Connect a number"}</h2>
        <p className="muted">
          From your Meta app's WhatsApp → API Setup page. The access token is encrypted and never shown again.
        </p>
        <form className="form form-grid" onSubmit={submit} noValidate>
          <Field label="Phone number id" error={fieldError("phone_number_id")}>
            {(f) => (
              <input
                id={f.id}
                inputMode="numeric"
                value={form.phone_number_id}
                onChange={set("phone_number_id")}
                aria-invalid={f.invalid}
                aria-describedby={f.describedBy}
              />
            )}
          </Field>
          <Field label="Business account id (WABA)" error={fieldError("business_account_id")}>
            {(f) => (
              <input
                id={f.id}
                inputMode="numeric"
                value={form.business_account_id}
                onChange={set("business_account_id")}
                aria-invalid={f.invalid}
                aria-describedby={f.describedBy}
              />
            )}
          </Field>
          <Field label="Access token" error={fieldError("access_token")}>
            {(f) => (
              <input
                id={f.id}
                type="password"
                autoComplete="off"
                value={form.access_token}
                onChange={set("access_token")}
                aria-invalid={f.invalid}
                aria-describedby={f.describedBy}
              />
            )}
          </Field>
          <Field
            label="Webhook verify token"
            hint="Any secret you also enter at Meta"
            error={fieldError("verify_token")}
          >
            {(f) => (
              <input
                id={f.id}
                autoComplete="off"
                value={form.verify_token}
                onChange={set("verify_token")}
                aria-invalid={f.invalid}
                aria-describedby={f.describedBy}
              />
            )}
          </Field>
          <Field
            label="Two-step PIN"
            hint="6 digits; leave empty if the number is already registered"
            error={fieldError("pin")}
          >
            {(f) => (
              <input
                id={f.id}
                inputMode="numeric"
                maxLength={6}
                autoComplete="off"
                value={form.pin}
                onChange={set("pin")}
                aria-invalid={f.invalid}
                aria-describedby={f.describedBy}
              />
            )}
          </Field>
          <div className="form-actions">
            <FormError error={errors.form} />
            {notice ? (
              <p className="form-notice" role="status">
                {notice}
              </p>
            ) : null}
            <button type="submit" className="btn btn-primary" disabled={save.isPending}>
              {save.isPending ? "Verifying with Meta…" : "Save and connect"}
            </button>
          </div>
        </form>
      </section>
    </div>
  );
}
