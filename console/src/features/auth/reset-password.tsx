import { useMutation } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { Link, useSearch } from "wouter";
import { Field, FormError, formErrors } from "../../lib/ui";
import { requestPasswordReset, resetPassword } from "./api";
import { AuthFrame } from "./sign-in";

/** Asks for a reset link by email; the answer is the same whether or not the email has a login. */
export function ForgotPasswordPage() {
  const [email, setEmail] = useState("");
  const request = useMutation({
    mutationFn: () => requestPasswordReset(email),
  });
  const errors = formErrors(request.error, ["email"]);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    request.mutate();
  };
  return (
    <AuthFrame title="Reset your password" footer={<Link href="/sign-in">Back to sign-in</Link>}>
      {request.isSuccess ? (
        <p role="status">
          If {email} has a login, a mail with a link to choose a new password is on its way. The link works
          once, within an hour.
        </p>
      ) : (
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
          <FormError error={errors.form} />
          <button type="submit" className="btn btn-primary btn-block" disabled={request.isPending}>
            Email me a link
          </button>
        </form>
      )}
    </AuthFrame>
  );
}

/** The page of the mailed link (`/reset-password?token=...`): a new password; every session ends. */
export function ResetPasswordPage() {
  const token = new URLSearchParams(useSearch()).get("token") ?? "";
  const [password, setPassword] = useState("");
  const reset = useMutation({
    mutationFn: () => resetPassword({ token, newPassword: password }),
  });
  const errors = formErrors(reset.error, ["newPassword"]);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    reset.mutate();
  };
  return (
    <AuthFrame title="Choose a new password" footer={<Link href="/sign-in">Back to sign-in</Link>}>
      {reset.isSuccess ? (
        <p role="status">
          Your password is changed and every session has ended. <Link href="/sign-in">Sign in</Link> with the
          new one.
        </p>
      ) : (
        <form onSubmit={submit} className="form" noValidate>
          <Field label="New password" error={errors.name === "newPassword" ? errors.field : undefined}>
            {(f) => (
              <input
                id={f.id}
                type="password"
                autoComplete="new-password"
                required
                minLength={8}
                value={password}
                onChange={(e) => setPassword(e.target.value)}
                aria-invalid={f.invalid}
                aria-describedby={f.describedBy}
              />
            )}
          </Field>
          <FormError error={errors.form} />
          <button type="submit" className="btn btn-primary btn-block" disabled={reset.isPending || !token}>
            Set the new password
          </button>
        </form>
      )}
    </AuthFrame>
  );
}
