import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { fullTime } from "../../lib/format";
import { useIsOwner, useMe } from "../../lib/session";
import { Badge, CopyField, Field, FormError, formErrors } from "../../lib/ui";
import { useMembers } from "../inbox/api";
import { createInvitation, fetchInvitations, settingsKeys } from "./api";

export function TeamSettings() {
  const me = useMe();
  const owner = useIsOwner();
  const members = useMembers();
  const [email, setEmail] = useState("");
  const client = useQueryClient();
  const pending = useQuery({
    queryKey: settingsKeys.invitations,
    enabled: owner,
    queryFn: fetchInvitations,
  });
  const invite = useMutation({
    onSuccess: () => void client.invalidateQueries({ queryKey: settingsKeys.invitations }),
    mutationFn: () => createInvitation(email.trim()),
  });
  const errors = formErrors(invite.error, ["email"]);
  const link = invite.data ? `${window.location.origin}/invite/${invite.data.invitation.token}` : null;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    invite.mutate();
  };
  return (
    <div className="settings-section">
      <section className="card" aria-labelledby="members-title">
        <h2 id="members-title">Members of {me.data?.account?.name}</h2>
        <ul className="member-list">
          {members.data?.map((m) => (
            <li key={m.user_id}>
              <span className="member-name">{m.name}</span>
              <span className="muted">{m.email}</span>
              <Badge tone={m.role === "owner" ? "info" : "neutral"}>{m.role}</Badge>
            </li>
          ))}
        </ul>
      </section>
      {owner ? (
        <section className="card" aria-labelledby="invite-title">
          <h2 id="invite-title">Invite a teammate</h2>
          <form className="form inline-form-wide" onSubmit={submit} noValidate>
            <Field
              label="Their email"
              hint="Only this person can accept the invitation"
              error={errors.name ? errors.field : undefined}
            >
              {(f) => (
                <input
                  id={f.id}
                  type="email"
                  value={email}
                  onChange={(e) => setEmail(e.target.value)}
                  aria-invalid={f.invalid}
                  aria-describedby={f.describedBy}
                />
              )}
            </Field>
            <button type="submit" className="btn btn-primary" disabled={invite.isPending}>
              Create invitation
            </button>
          </form>
          <FormError error={errors.form} />
          {link ? (
            <div className="secret-box" role="status">
              <p>
                We emailed {invite.data?.invitation.email} a link to accept, valid until{" "}
                {fullTime(invite.data?.invitation.expires_at)}. You may also send them this one: only they can
                accept it, signed in with that email once it is verified.
              </p>
              <CopyField label="Invitation link" value={link} />
            </div>
          ) : null}
          <h3>Pending invitations</h3>
          {pending.data?.length ? (
            <ul className="item-list" aria-label="Pending invitations">
              {pending.data.map((i) => (
                <li key={i.id}>
                  <span>{i.email}</span>
                  <span className="muted">until {fullTime(i.expires_at)}</span>
                </li>
              ))}
            </ul>
          ) : (
            <p className="muted">None: everyone invited has joined.</p>
          )}
        </section>
      ) : null}
    </div>
  );
}
