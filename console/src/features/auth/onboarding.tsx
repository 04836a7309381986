import { useMutation, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { useLocation } from "wouter";
import { useMe } from "../../lib/session";
import { Field, FormError, formErrors } from "../../lib/ui";
import { createAccount, signOut } from "./api";

/** A signed-in user without an account: create one, or join one with an invitation. */
export function OnboardingPage() {
  const me = useMe();
  const client = useQueryClient();
  const [, navigate] = useLocation();
  const [name, setName] = useState("");
  const [invite, setInvite] = useState("");
  const create = useMutation({
    mutationFn: () => createAccount(name),
    onSuccess: async () => {
      await client.invalidateQueries({ queryKey: ["me"] });
      navigate("/channel");
    },
  });
  const errors = formErrors(create.error, ["name"]);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  const leave = async () => {
    await signOut().catch(() => {});
    client.clear();
    navigate("/sign-in", { replace: true });
  };
  const join = (e: FormEvent) => {
    e.preventDefault();
    const token = invite.trim().split("/invite/").pop() ?? "";
    if (token) navigate(`/invite/${encodeURIComponent(token)}`);
  };
  return (
    <div className="auth-page">
      <main className="auth-card auth-card-wide">
        <h1>Welcome, {me.data?.user.name}</h1>
        <p className="subtitle">
          Create your business's account, or join your team with an invitation. Not {me.data?.user.email}?{" "}
          <button type="button" className="link-button" onClick={leave}>
            Sign out
          </button>
        </p>
        <div className="onboarding-grid">
          <form onSubmit={submit} className="form card">
            <h2>Create an account</h2>
            <Field label="Business name" error={errors.name ? errors.field : undefined}>
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
            <FormError error={errors.form} />
            <button type="submit" className="btn btn-primary" disabled={create.isPending}>
              Create account
            </button>
          </form>
          <form onSubmit={join} className="form card">
            <h2>Join a team</h2>
            <Field label="Invitation link or code">
              {(f) => <input id={f.id} value={invite} onChange={(e) => setInvite(e.target.value)} />}
            </Field>
            <button type="submit" className="btn">
              Continue
            </button>
          </form>
        </div>
      </main>
    </div>
  );
}
