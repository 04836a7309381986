import { useMutation, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import type { CannedResponse } from "../../lib/types";
import { Empty, Field, FormError, formErrors, Spinner } from "../../lib/ui";
import { inboxKeys, useCannedResponses } from "../inbox/api";
import { deleteCannedResponse, saveCannedResponse } from "./api";

export function CannedSettings() {
  const client = useQueryClient();
  const canned = useCannedResponses();
  const [editing, setEditing] = useState<CannedResponse | null>(null);
  const [shortcut, setShortcut] = useState("");
  const [text, setText] = useState("");
  const save = useMutation({
    mutationFn: () => saveCannedResponse(editing?.id, { shortcut, text }),
    onSuccess: () => {
      setEditing(null);
      setShortcut("");
      setText("");
      void client.invalidateQueries({ queryKey: inboxKeys.canned });
    },
  });
  const remove = useMutation({
    mutationFn: deleteCannedResponse,
    onSuccess: () => void client.invalidateQueries({ queryKey: inboxKeys.canned }),
  });
  if (canned.isPending) return <Spinner />;
  if (canned.isError) return <FormError error={canned.error.message} />;
  const errors = formErrors(save.error, ["shortcut", "text"]);
  const conflict = save.error && "status" in save.error && save.error.status === 409;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  return (
    <div className="settings-section">
      <section className="card">
        <h2>{editing ? `Edit /${editing.shortcut}` : "New canned response"}</h2>
        <form className="form" onSubmit={submit} noValidate>
          <Field
            label="Shortcut"
            hint="Type /shortcut in the composer; a-z, 0-9, _ and -"
            error={conflict ? save.error?.message : errors.name === "shortcut" ? errors.field : undefined}
          >
            {(f) => (
              <input
                id={f.id}
                value={shortcut}
                onChange={(e) => setShortcut(e.target.value)}
                aria-invalid={f.invalid}
                aria-describedby={f.describedBy}
              />
            )}
          </Field>
          <Field label="Text" error={errors.name === "text" ? errors.field : undefined}>
            {(f) => (
              <textarea
                id={f.id}
                rows={3}
                value={text}
                onChange={(e) => setText(e.target.value)}
                aria-invalid={f.invalid}
                aria-describedby={f.describedBy}
              />
            )}
          </Field>
          <FormError error={conflict ? undefined : errors.form} />
          <div className="form-actions-row">
            <button type="submit" className="btn btn-primary" disabled={save.isPending}>
              {editing ? "Save" : "Add"}
            </button>
            {editing ? (
              <button
                type="button"
                className="btn"
                onClick={() => {
                  setEditing(null);
                  setShortcut("");
                  setText("");
                }}
              >
                Cancel
              </button>
            ) : null}
          </div>
        </form>
      </section>
      <section className="card">
        <h2>Canned responses</h2>
        {!canned.data?.length ? (
          <Empty title="None yet">Save answers you type often.</Empty>
        ) : (
          <ul className="item-list">
            {canned.data.map((c) => (
              <li key={c.id}>
                <div>
                  <strong>/{c.shortcut}</strong>
                  <p className="muted clip">{c.text}</p>
                </div>
                <div className="row-actions">
                  <button
                    type="button"
                    className="btn btn-small"
                    onClick={() => {
                      setEditing(c);
                      setShortcut(c.shortcut);
                      setText(c.text);
                    }}
                    aria-label={`Edit /${c.shortcut}`}
                  >
                    Edit
                  </button>
                  <button
                    type="button"
                    className="btn btn-small btn-danger"
                    onClick={() => remove.mutate(c.id)}
                    aria-label={`Delete /${c.shortcut}`}
                  >
                    Delete
                  </button>
                </div>
              </li>
            ))}
          </ul>
        )}
      </section>
    </div>
  );
}
