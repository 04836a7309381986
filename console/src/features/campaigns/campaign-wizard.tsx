import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useMemo, useState } from "react";
import { useLocation, useSearch } from "wouter";
import { errorText } from "../../lib/api";
import { templateComponent } from "../../lib/format";
import type { WaTemplate } from "../../lib/types";
import { FormError, PageHeader, Spinner } from "../../lib/ui";
import { useTemplates } from "../inbox/api";
import {
  campaignAction,
  campaignKeys,
  fetchCampaign,
  previewCampaign,
  saveCampaign,
  sendCampaignTest,
} from "./api";

const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_]+)\s*\}\}/g;
const FIELDS = ["{{contact.name|there}}", "{{contact.phone}}", "{{contact.attributes.KEY|fallback}}"];
const SAMPLE = { name: "Ada", phone: "15550001234", attributes: {} as Record<string, string> };

const keysOf = (text: string | undefined) => {
  const keys = [...new Set([...(text ?? "").matchAll(PLACEHOLDER)].map((m) => m[1] as string))];
  return keys.every((k) => /^\d+$/.test(k)) ? keys.sort((a, b) => Number(a) - Number(b)) : keys;
};

/** A value as a sample contact would see it (the server renders the real samples). */
function renderSample(value: string) {
  return value.replace(/\{\{([^{}]*)\}\}/g, (_w, inner: string) => {
    const [field = "", fallback = ""] = inner.split("|");
    const name = field.trim();
    const found =
      name === "contact.name"
        ? SAMPLE.name
        : name === "contact.phone"
          ? `+${SAMPLE.phone}`
          : SAMPLE.attributes[name.replace("contact.attributes.", "")];
    return found || fallback;
  });
}

const list = (text: string) =>
  text
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);

/** The value once it has stopped changing for `ms` (the live count waits for typing to pause). */
function useDebounced<T>(value: T, ms: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return settled;
}

type TemplateButton = { type?: string; text?: string; url?: string };

/** The template's URL buttons with placeholders, by their index among the buttons (as a send names them). */
function urlButtonsOf(template: WaTemplate | undefined) {
  const component = template?.components.find((c) => c.type === "BUTTONS") as
    | { buttons?: TemplateButton[] }
    | undefined;
  return (component?.buttons ?? []).flatMap((button, index) => {
    const keys = button.type?.toUpperCase() === "URL" ? keysOf(button.url) : [];
    return keys.length ? [{ index, text: button.text ?? "", url: button.url ?? "", keys }] : [];
  });
}

function audienceOf(tagsAny: string, tagsNone: string, attributes: string) {
  const audience: Record<string, unknown> = {};
  if (list(tagsAny).length) audience.tags_any = list(tagsAny);
  if (list(tagsNone).length) audience.tags_none = list(tagsNone);
  const pairs = list(attributes)
    .map((p) => p.split("="))
    .filter((p) => p.length === 2 && p[0]?.trim());
  if (pairs.length) audience.attributes = Object.fromEntries(pairs.map(([k, v]) => [k?.trim(), v?.trim()]));
  return audience;
}

export function CampaignWizard() {
  const [, navigate] = useLocation();
  const search = new URLSearchParams(useSearch());
  const client = useQueryClient();
  const templates = useTemplates("APPROVED");
  const [id, setId] = useState<string | null>(search.get("draft"));
  const [name, setName] = useState("");
  const [templateKey, setTemplateKey] = useState("");
  const [body, setBody] = useState<Record<string, string>>({});
  const [header, setHeader] = useState<Record<string, string>>({});
  // Button parameters by `${index}:${key}`.
  const [buttons, setButtons] = useState<Record<string, string>>({});
  const [tagsAny, setTagsAny] = useState("");
  const [tagsNone, setTagsNone] = useState("");
  const [attributes, setAttributes] = useState("");
  const [testPhone, setTestPhone] = useState("");
  const [scheduleAt, setScheduleAt] = useState("");
  const [error, setError] = useState<string>();
  const [notice, setNotice] = useState<string>();
  const [busy, setBusy] = useState(false);

  const draft = useQuery({
    queryKey: campaignKeys.campaign(id),
    enabled: Boolean(id),
    queryFn: () => fetchCampaign(id ?? ""),
  });
  // A saved draft opened again: its fields fill the form once.
  const [loaded, setLoaded] = useState(false);
  useEffect(() => {
    const c = draft.data;
    if (!c || loaded) return;
    setLoaded(true);
    setName(c.name);
    setTemplateKey(`${c.template.name}|${c.template.language}`);
    const asMap = (v: unknown, keys: string[]) =>
      Array.isArray(v)
        ? Object.fromEntries(keys.map((k, i) => [k, String(v[i] ?? "")]))
        : ((v ?? {}) as Record<string, string>);
    const t = templates.data?.find((x) => x.name === c.template.name && x.language === c.template.language);
    setBody(asMap(c.parameters.body, keysOf(templateComponent(t, "BODY")?.text)));
    const h = templateComponent(t, "HEADER");
    setHeader(asMap(c.parameters.header, h && (h.format ?? "TEXT") !== "TEXT" ? ["link"] : keysOf(h?.text)));
    setButtons(
      Object.fromEntries(
        (c.parameters.buttons ?? []).flatMap((b) => b.parameters.map((v, i) => [`${b.index}:${i + 1}`, v])),
      ),
    );
    setTagsAny((c.audience.tags_any ?? []).join(", "));
    setTagsNone((c.audience.tags_none ?? []).join(", "));
    setAttributes(
      Object.entries(c.audience.attributes ?? {})
        .map(([k, v]) => `${k}=${v}`)
        .join(", "),
    );
  }, [draft.data, loaded, templates.data]);

  const template: WaTemplate | undefined = templates.data?.find(
    (t) => `${t.name}|${t.language}` === templateKey,
  );
  const bodyText = templateComponent(template, "BODY")?.text;
  const headerComponent = templateComponent(template, "HEADER");
  const bodyKeys = useMemo(() => keysOf(bodyText), [bodyText]);
  const headerIsMedia = headerComponent && (headerComponent.format ?? "TEXT") !== "TEXT";
  const headerKeys = useMemo(
    () => (headerIsMedia ? ["link"] : keysOf(headerComponent?.text)),
    [headerIsMedia, headerComponent],
  );
  const named = bodyKeys.some((k) => !/^\d+$/.test(k));
  const urlButtons = useMemo(() => urlButtonsOf(template), [template]);
  const rendered = (bodyText ?? "").replace(PLACEHOLDER, (w, k: string) => renderSample(body[k] ?? "") || w);

  const parametersOf = () => {
    const parameters: Record<string, unknown> = {};
    if (bodyKeys.length) parameters.body = named ? body : bodyKeys.map((k) => body[k] ?? "");
    if (headerKeys.length) parameters.header = headerKeys.map((k) => header[k] ?? "");
    if (urlButtons.length) {
      parameters.buttons = urlButtons.map((b) => ({
        index: b.index,
        parameters: b.keys.map((k) => buttons[`${b.index}:${k}`] ?? ""),
      }));
    }
    return parameters;
  };

  // The live count: the form as it stands (saved or not), asked again once typing pauses.
  const [tName = "", tLanguage = ""] = templateKey.split("|");
  const draftBody = useDebounced(
    JSON.stringify({
      audience: audienceOf(tagsAny, tagsNone, attributes),
      ...(templateKey ? { template: { name: tName, language: tLanguage }, parameters: parametersOf() } : {}),
    }),
    300,
  );
  const preview = useQuery({
    queryKey: campaignKeys.preview(draftBody),
    queryFn: () => previewCampaign(JSON.parse(draftBody)),
    placeholderData: (previous) => previous,
  });

  const payload = () => {
    const [tName = "", language = ""] = templateKey.split("|");
    const parameters = parametersOf();
    return {
      name: name.trim() || "Untitled campaign",
      template: { name: tName, language },
      parameters,
      audience: audienceOf(tagsAny, tagsNone, attributes),
    };
  };

  const run = async (what: () => Promise<void>) => {
    setBusy(true);
    setError(undefined);
    setNotice(undefined);
    try {
      await what();
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };

  const save = () =>
    run(async () => {
      const body = payload();
      const saved = await saveCampaign(id, body);
      setId(saved.campaign.id);
      setLoaded(true);
      await client.invalidateQueries({ queryKey: campaignKeys.all });
      setNotice("Draft saved");
    });

  const sendTest = () =>
    run(async () => {
      await sendCampaignTest(id ?? "", testPhone);
      setNotice(`Test sent to ${testPhone}`);
    });

  const start = () =>
    run(async () => {
      if (scheduleAt) {
        await saveCampaign(id, { scheduled_at: new Date(scheduleAt).toISOString() });
      }
      await campaignAction(id ?? "", "start");
      await client.invalidateQueries({ queryKey: campaignKeys.all });
      navigate(`/campaigns/${id}`);
    });

  if (templates.isPending || (id && draft.isPending)) return <Spinner />;
  return (
    <div className="page campaign-wizard">
      <PageHeader
        title={id ? "Campaign draft" : "New campaign"}
        subtitle="Template, parameters, audience, then start."
      />
      <section className="card">
        <h2>1. Template</h2>
        <label>
          Name
          <input value={name} onChange={(e) => setName(e.target.value)} placeholder="Spring restock" />
        </label>
        <label>
          Template
          <select value={templateKey} onChange={(e) => setTemplateKey(e.target.value)}>
            <option value="">Choose an approved template</option>
            {templates.data?.map((t) => (
              <option key={t.id} value={`${t.name}|${t.language}`}>
                {t.name} ({t.language})
              </option>
            ))}
          </select>
        </label>
      </section>
      {template ? (
        <section className="card">
          <h2>2. Parameters</h2>
          <p className="muted">Map each placeholder to contact fields: {FIELDS.join(", ")}.</p>
          {headerKeys.map((k) => (
            <label key={`h${k}`}>
              {headerIsMedia
                ? `Header ${headerComponent?.format?.toLowerCase()} (https link or media id)`
                : `Header {{${k}}}`}
              <input
                value={header[k] ?? ""}
                onChange={(e) => setHeader({ ...header, [k]: e.target.value })}
              />
            </label>
          ))}
          {bodyKeys.map((k) => (
            <label key={`b${k}`}>
              {`Body {{${k}}}`}
              <input
                value={body[k] ?? ""}
                placeholder="{{contact.name|there}}"
                onChange={(e) => setBody({ ...body, [k]: e.target.value })}
              />
            </label>
          ))}
          {urlButtons.flatMap((b) =>
            b.keys.map((k) => (
              <label key={`u${b.index}:${k}`}>
                {`Button "${b.text}" URL {{${k}}}`}
                <input
                  value={buttons[`${b.index}:${k}`] ?? ""}
                  placeholder="{{contact.phone}}"
                  title={b.url}
                  onChange={(e) => setButtons({ ...buttons, [`${b.index}:${k}`]: e.target.value })}
                />
              </label>
            )),
          )}
          <p className="muted">Preview for a contact named {SAMPLE.name}:</p>
          <blockquote data-testid="rendered-preview">{rendered}</blockquote>
        </section>
      ) : null}
      <section className="card">
        <h2>3. Audience</h2>
        <label>
          Has any of these tags
          <input value={tagsAny} onChange={(e) => setTagsAny(e.target.value)} placeholder="vip, newsletter" />
        </label>
        <label>
          Has none of these tags
          <input value={tagsNone} onChange={(e) => setTagsNone(e.target.value)} placeholder="churned" />
        </label>
        <label>
          Attributes equal
          <input
            value={attributes}
            onChange={(e) => setAttributes(e.target.value)}
            placeholder="city=Lisbon"
          />
        </label>
        <button type="button" className="btn" disabled={busy || !templateKey} onClick={() => void save()}>
          {id ? "Save" : "Save draft"}
        </button>
        {notice ? (
          <p className="form-notice" role="status">
            {notice}
          </p>
        ) : null}
        <FormError error={error} />
      </section>
      {preview.data ? (
        <section className="card" aria-label="Audience preview">
          <h2>4. Who gets it</h2>
          <p data-testid="recipient-count">
            <strong>{preview.data.recipients}</strong> recipients
          </p>
          <p className="muted">
            Left out: {preview.data.excluded.opted_out} opted out, {preview.data.excluded.no_address} without
            a number, {preview.data.excluded.duplicate} duplicates.
          </p>
          {preview.data.template_problem ? (
            <p className="muted" data-testid="template-problem">
              Samples once the parameters are complete: {preview.data.template_problem}
            </p>
          ) : null}
          <ol className="samples">
            {preview.data.samples.map((s) => (
              <li key={s.contact_id}>
                <strong>{s.name ?? `+${s.phone}`}</strong>: {s.text}
              </li>
            ))}
          </ol>
        </section>
      ) : preview.isError ? (
        <FormError error={preview.error.message} />
      ) : null}
      {id ? (
        <section className="card">
          <h2>5. Test and start</h2>
          <label>
            Test number
            <input
              value={testPhone}
              onChange={(e) => setTestPhone(e.target.value)}
              placeholder="+1 555 010 0002"
            />
          </label>
          <button type="button" className="btn" disabled={busy || !testPhone} onClick={() => void sendTest()}>
            Send test
          </button>
          <label>
            Schedule (empty: start now)
            <input type="datetime-local" value={scheduleAt} onChange={(e) => setScheduleAt(e.target.value)} />
          </label>
          <button type="button" className="btn btn-primary" disabled={busy} onClick={() => void start()}>
            {scheduleAt ? "Schedule campaign" : "Start now"}
          </button>
        </section>
      ) : null}
    </div>
  );
}
