import { useMutation, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { Link, useLocation, useSearch } from "wouter";
import { HttpError } from "../../lib/api";
import { Field, FormError, formErrors } from "../../lib/ui";
import { ConnectionBanner } from "../shell/shell";
import * as auth from "./api";

/** Only paths inside the console, never another site. */
function safeNext(search: string) {
  const next = new URLSearchParams(search).get("next");
  return next?.startsWith("/") && !next.startsWith("//") ? next : "/inbox";
}

export function AuthFrame(props: { title: string; children: React.ReactNode; footer: React.ReactNode }) {
  return (
    <div className="auth-page">
      <ConnectionBanner />
      <main className="auth-card">
        <div className="brand brand-large" aria-hidden="true">
          <span className="brand-mark">wa</span>
          <span className="brand-name">inbox</span>
        </div>
        <h1>{props.title}</h1>
        {props.children}
        <p className="auth-footer">{props.footer}</p>
      </main>
    </div>
  );
}

export function SignInPage() {
  const search = useSearch();
  const [, navigate] = useLocation();
  const client = useQueryClient();
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const signIn = useMutation({
    mutationFn: () => auth.signIn({ email, password }),
    onSuccess: async () => {
      await client.resetQueries();
      navigate(safeNext(search), { replace: true });
    },
  });
  // better-auth answers a wrong password with a bare 401 "Unauthorized": say what it means.
  const errors =
    signIn.error instanceof HttpError && signIn.error.status === 401
      ? { field: undefined, name: undefined, form: "Wrong email or password" }
      : formErrors(signIn.error, ["email", "password"]);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    signIn.mutate();
  };
  return (
    <AuthFrame
      title="Sign in"
      footer={
        <>
          New here? <Link href={`/sign-up${search ? `?${search}` : ""}`}>Create an account</Link>
          {" · "}
          <Link href="/forgot-password">Forgot your password?</Link>
        </>
      }
    >
      <form onSubmit={submit} className="form" noValidate>
        <Field label="Email" error={errors.name === "email" ? errors.field : undefined}>
          {(f) => (
            <input
              id={f.id}
              type="email"
              autoComplete="email"
              required
              value={email}
              onChange={(e) => setEmail(e.target.value)}
              aria-invalid={f.invalid}
              aria-describedby={f.describedBy}
            />
          )}
        </Field>
        <Field label="Password" error={errors.name === "password" ? errors.field : undefined}>
          {(f) => (
            <input
              id={f.id}
              type="password"
              autoComplete="current-password"
              required
              value={password}
              onChange={(e) => setPassword(e.target.value)}
              aria-invalid={f.invalid}
              aria-describedby={f.describedBy}
            />
          )}
        </Field>
        <FormError error={errors.form} />
        <button type="submit" className="btn btn-primary btn-block" disabled={signIn.isPending}>
          {signIn.isPending ? "Signing in…" : "Sign in"}
        </button>
      </form>
    </AuthFrame>
  );
}

export function SignUpPage() {
  const search = useSearch();
  const [, navigate] = useLocation();
  const client = useQueryClient();
  const [name, setName] = useState("");
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [localError, setLocalError] = useState<{ field: string; text: string } | null>(null);
  const signUp = useMutation({
    // Sign-up only creates the login (it never opens a session, whatever the answer); signing in
    // right after it does, and fails with the sign-up's own error when the login was not created.
    mutationFn: async () => {
      await auth.signUp({ name, email, password });
      try {
        return await auth.signIn({ email, password });
      } catch (error) {
        // Sign-up answers alike for a taken email: then this password does not open that login.
        if (error instanceof HttpError && error.status === 401)
          throw new HttpError(
            401,
            "email: this email already has a login with another password. Sign in instead.",
          );
        throw error;
      }
    },
    onSuccess: async () => {
      await client.resetQueries();
      navigate(safeNext(search), { replace: true });
    },
  });
  const errors = formErrors(signUp.error, ["name", "email", "password"]);
  const serverError = signUp.error?.message ?? "";
  const fieldError = (field: string) => {
    if (localError?.field === field) return localError.text;
    // An error that names its field goes there only; better-auth's own messages are matched by word.
    if (errors.name) return errors.name === field ? errors.field : undefined;
    if (field === "password" && /password/i.test(serverError)) return serverError;
    if (field === "email" && /email|user already exists/i.test(serverError)) return serverError;
    return undefined;
  };
  const formError = /password|email|user already exists/i.test(serverError) ? undefined : errors.form;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setLocalError(null);
    if (!name.trim()) return setLocalError({ field: "name", text: "Enter your name" });
    if (!/^\S+@\S+\.\S+$/.test(email))
      return setLocalError({ field: "email", text: "Enter a valid email address" });
    if (password.length < 8) return setLocalError({ field: "password", text: "Use at least 8 characters" });
    signUp.mutate();
  };
  return (
    <AuthFrame
      title="Create your login"
      footer={
        <>
          Already have one? <Link href={`/sign-in${search ? `?${search}` : ""}`}>Sign in</Link>
        </>
      }
    >
      <form onSubmit={submit} className="form" noValidate>
        <Field label="Your name" error={fieldError("name")}>
          {(f) => (
            <input
              id={f.id}
              autoComplete="name"
              value={name}
              onChange={(e) => setName(e.target.value)}
              aria-invalid={f.invalid}
              aria-describedby={f.describedBy}
            />
          )}
        </Field>
        <Field label="Email" error={fieldError("email")}>
          {(f) => (
            <input
              id={f.id}
              type="email"
              autoComplete="email"
              value={email}
              onChange={(e) => setEmail(e.target.value)}
              aria-invalid={f.invalid}
              aria-describedby={f.describedBy}
            />
          )}
        </Field>
        <Field label="Password" hint="At least 8 characters" error={fieldError("password")}>
          {(f) => (
            <input
              id={f.id}
              type="password"
              autoComplete="new-password"
              value={password}
              onChange={(e) => setPassword(e.target.value)}
              aria-invalid={f.invalid}
              aria-describedby={f.describedBy}
            />
          )}
        </Field>
        <FormError error={formError} />
        <button type="submit" className="btn btn-primary btn-block" disabled={signUp.isPending}>
          {signUp.isPending ? "Creating…" : "Sign up"}
        </button>
      </form>
    </AuthFrame>
  );
}
