import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useLocation, useParams } from "wouter";
import { useMe } from "../../lib/session";
import { FormError } from "../../lib/ui";
import { acceptInvitation } from "./api";

export function AcceptInvitePage() {
  const { token } = useParams<{ token: string }>();
  const me = useMe();
  const client = useQueryClient();
  const [, navigate] = useLocation();
  const accept = useMutation({
    mutationFn: () => acceptInvitation(token),
    onSuccess: async () => {
      await client.invalidateQueries({ queryKey: ["me"] });
      navigate("/inbox", { replace: true });
    },
  });
  if (me.data?.account) {
    return (
      <div className="page">
        <h1>Invitation</h1>
        <p>You already belong to {me.data.account.name}; an invitation cannot move you to another account.</p>
      </div>
    );
  }
  return (
    <div className="auth-page">
      <main className="auth-card">
        <h1>Join your team</h1>
        <p className="subtitle">
          Signed in as {me.data?.user.email}. Accept the invitation to join the account that sent it.
        </p>
        <FormError error={accept.error?.message} />
        <button
          type="button"
          className="btn btn-primary btn-block"
          onClick={() => accept.mutate()}
          disabled={accept.isPending}
        >
          Accept invitation
        </button>
      </main>
    </div>
  );
}
