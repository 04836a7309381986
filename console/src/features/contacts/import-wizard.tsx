import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { Link } from "wouter";
import { errorText } from "../../lib/api";
import { FormError, PageHeader } from "../../lib/ui";
import type { ImportPreview } from "./api";
import { contactKeys, fetchImport, importErrorsCsvUrl, previewImport, startImport } from "./api";

/** Column -> field, the way the wizard edits it (the API takes field -> column). */
type ColumnFields = Record<string, string>;

const attributeKey = (column: string) =>
  column
    .toLowerCase()
    .trim()
    .replace(/[^a-z0-9_.-]+/g, "_")
    .replace(/^_+|_+$/g, "") || "column";

function toApiMapping(columns: ColumnFields) {
  const mapping: Record<string, string> = {};
  for (const [column, field] of Object.entries(columns)) if (field) mapping[field] = column;
  return mapping;
}

export function ImportWizard() {
  const [file, setFile] = useState<File | null>(null);
  const [preview, setPreview] = useState<ImportPreview | null>(null);
  const [fields, setFields] = useState<ColumnFields>({});
  const [onDuplicate, setOnDuplicate] = useState<"skip" | "update">("skip");
  const [addTags, setAddTags] = useState("");
  const [source, setSource] = useState("");
  const [importId, setImportId] = useState<string | null>(null);

  const read = useMutation({
    mutationFn: async (chosen: File) => {
      const form = new FormData();
      form.set("file", chosen);
      return previewImport(form);
    },
    onSuccess: (answer) => {
      setPreview(answer);
      const byColumn: ColumnFields = {};
      for (const column of answer.columns) byColumn[column] = "";
      for (const [field, column] of Object.entries(answer.suggested_mapping)) byColumn[column] = field;
      setFields(byColumn);
    },
  });
  const start = useMutation({
    mutationFn: async () => {
      if (!file) throw new Error("Choose a file first");
      const form = new FormData();
      form.set("file", file);
      form.set("mapping", JSON.stringify(toApiMapping(fields)));
      form.set("on_duplicate", onDuplicate);
      if (addTags.trim()) form.set("add_tags", addTags);
      if (source.trim()) form.set("opt_in_source", source.trim());
      return startImport(form);
    },
    onSuccess: (started) => setImportId(started.id),
  });
  const progress = useQuery({
    queryKey: contactKeys.import(importId),
    enabled: importId !== null,
    queryFn: () => fetchImport(importId ?? ""),
    refetchInterval: (query) =>
      query.state.data?.status === "completed" || query.state.data?.status === "failed" ? false : 500,
  });

  const step = importId ? "progress" : preview ? "mapping" : "upload";
  const job = progress.data;
  const done = job?.status === "completed" || job?.status === "failed";
  const client = useQueryClient();
  // The contact list is out of date once the import has written.
  useEffect(() => {
    if (done) void client.invalidateQueries({ queryKey: contactKeys.all });
  }, [done, client]);
  const total = job?.total_rows ?? 0;

  return (
    <div className="page">
      <PageHeader title="Import contacts" subtitle={<Link href="/contacts">All contacts</Link>} />
      <ol className="settings-tabs" aria-label="Steps">
        <li aria-current={step === "upload" ? "step" : undefined}>1. Upload</li>
        <li aria-current={step === "mapping" ? "step" : undefined}>2. Map columns</li>
        <li aria-current={step === "progress" ? "step" : undefined}>3. Import</li>
      </ol>

      {step === "upload" ? (
        <section className="card">
          <label htmlFor="import-file">
            CSV file (UTF-8, comma or semicolon separated, with a header row; up to 50 MB)
          </label>
          <input
            id="import-file"
            type="file"
            accept=".csv,text/csv"
            onChange={(e) => {
              const chosen = e.target.files?.[0] ?? null;
              setFile(chosen);
              if (chosen) read.mutate(chosen);
            }}
          />
          <FormError error={read.error ? errorText(read.error) : undefined} />
        </section>
      ) : null}

      {step === "mapping" && preview ? (
        <section className="card">
          <h2>Map the columns of {file?.name}</h2>
          <div className="table-wrap">
            <table className="table">
              <thead>
                <tr>
                  {preview.columns.map((column) => (
                    <th key={column} scope="col">
                      <div>{column}</div>
                      <select
                        aria-label={`Field for column ${column}`}
                        value={fields[column] ?? ""}
                        onChange={(e) => setFields({ ...fields, [column]: e.target.value })}
                      >
                        <option value="">Skip</option>
                        <option value="phone">Phone</option>
                        <option value="name">Name</option>
                        <option value="tags">Tags</option>
                        <option value={`attributes.${attributeKey(column)}`}>
                          Attribute {attributeKey(column)}
                        </option>
                        {fields[column]?.startsWith("attributes.") &&
                        fields[column] !== `attributes.${attributeKey(column)}` ? (
                          <option value={fields[column]}>Attribute {fields[column].slice(11)}</option>
                        ) : null}
                      </select>
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {preview.rows.map((row, i) => (
                  // biome-ignore lint/suspicious/noArrayIndexKey: preview rows have no identity but their place
                  <tr key={i}>
                    {preview.columns.map((column, j) => (
                      <td key={column}>{row[j] ?? ""}</td>
                    ))}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <div className="form">
            <label htmlFor="on-duplicate">A number that exists already</label>
            <select
              id="on-duplicate"
              value={onDuplicate}
              onChange={(e) => setOnDuplicate(e.target.value as "skip" | "update")}
            >
              <option value="skip">Skip it</option>
              <option value="update">Update it</option>
            </select>
            <label htmlFor="add-tags">Tags for every imported contact (comma separated)</label>
            <input id="add-tags" value={addTags} onChange={(e) => setAddTags(e.target.value)} />
            <label htmlFor="opt-in-source">How these customers consented (optional)</label>
            <input id="opt-in-source" value={source} onChange={(e) => setSource(e.target.value)} />
          </div>
          <FormError error={start.error ? errorText(start.error) : undefined} />
          <div className="form-actions-row">
            <button
              type="button"
              className="btn"
              onClick={() => {
                setPreview(null);
                setFile(null);
              }}
            >
              Choose another file
            </button>
            <button
              type="button"
              className="btn btn-primary"
              disabled={start.isPending}
              onClick={() => start.mutate()}
            >
              Start import
            </button>
          </div>
        </section>
      ) : null}

      {step === "progress" ? (
        <section className="card" aria-live="polite">
          <h2>
            {done ? (job?.status === "completed" ? "Import finished" : "Import stopped") : "Importing…"}
          </h2>
          <progress
            aria-label="Import progress"
            max={total || 1}
            value={done ? total || 1 : (job?.processed_rows ?? 0)}
            style={{ width: "100%" }}
          />
          <p>
            {(job?.processed_rows ?? 0).toLocaleString()} of {total ? total.toLocaleString() : "…"} rows
          </p>
          {job && done ? (
            <ul className="item-list" aria-label="Import result">
              <li>Created: {job.created.toLocaleString()}</li>
              <li>Updated: {job.updated.toLocaleString()}</li>
              <li>Skipped: {job.skipped.toLocaleString()}</li>
              <li>Errors: {job.errors.toLocaleString()}</li>
            </ul>
          ) : null}
          {job?.failure ? <FormError error={job.failure} /> : null}
          {job && done && job.errors > 0 ? (
            <a className="btn" href={importErrorsCsvUrl(job.id)} download>
              Download the rows with errors
            </a>
          ) : null}
          {done ? (
            <Link href="/contacts" className="btn btn-primary">
              See contacts
            </Link>
          ) : null}
        </section>
      ) : null}
    </div>
  );
}
