import { useQueryClient } from "@tanstack/react-query";
import { lazy, Suspense, useEffect, useLayoutEffect } from "react";
import { Redirect, Route, Switch, useLocation } from "wouter";
import { AcceptInvitePage } from "./features/auth/accept-invite";
import { OnboardingPage } from "./features/auth/onboarding";
import { ForgotPasswordPage, ResetPasswordPage } from "./features/auth/reset-password";
import { SignInPage, SignUpPage } from "./features/auth/sign-in";
import { CampaignView } from "./features/campaigns/campaign-view";
import { CampaignWizard } from "./features/campaigns/campaign-wizard";
import { CampaignsPage } from "./features/campaigns/campaigns-page";
import { ChannelPage } from "./features/channel/channel-page";
import { ContactPage } from "./features/contacts/contact-page";
import { ContactsPage } from "./features/contacts/contacts-page";
import { ImportWizard } from "./features/contacts/import-wizard";
import { FlowsPage } from "./features/flows/flows-page";
import { RunsPage } from "./features/flows/runs-page";
import { InboxPage } from "./features/inbox/inbox-page";
import { SettingsPage } from "./features/settings/settings-page";
import { Shell } from "./features/shell/shell";
import { errorText, HttpError, setUnauthorizedHandler } from "./lib/api";
import { useOnline } from "./lib/connection";
import { startLive } from "./lib/live";
import { isAuthPath, signInPath, useMe } from "./lib/session";
import { FormError, Spinner } from "./lib/ui";

// The canvas (React Flow) is the heaviest screen: it loads only when opened.
const FlowEditorPage = lazy(() => import("./features/flows/editor/flow-editor"));

/**
 * Where a 401 sends the user: sign-in, then back to where they were. Every 401 (any API request,
 * the signed-in user's own, the event stream) comes here, and only the first one navigates: the
 * others, from requests that were in flight with it, find sign-in already open.
 */
function useUnauthorizedRedirect() {
  const [, navigate] = useLocation();
  const client = useQueryClient();
  // A layout effect: the handler is in place before any answer to the first render's requests.
  useLayoutEffect(() => {
    setUnauthorizedHandler(() => {
      const { pathname, search } = window.location;
      if (isAuthPath(pathname)) return;
      navigate(signInPath(pathname + search), { replace: true });
      // The ended session's user is fetched anew after signing in (nothing observes it now).
      client.removeQueries({ queryKey: ["me"] });
    });
  }, [navigate, client]);
}

/** Refreshes everything once the service answers again after an outage. */
function useRefreshOnReconnect() {
  const online = useOnline();
  const client = useQueryClient();
  useEffect(() => {
    if (online) void client.invalidateQueries();
  }, [online, client]);
}

function SignedIn() {
  const me = useMe();
  const client = useQueryClient();
  const [location] = useLocation();
  const hasAccount = Boolean(me.data?.account);
  useEffect(() => (hasAccount ? startLive(client) : undefined), [hasAccount, client]);

  if (!me.data) {
    // A 401: the unauthorized handler is already on its way to sign-in.
    if (me.error instanceof HttpError && me.error.status === 401) return <Spinner />;
    // Any other answer is no reason to sign in again (a lost connection is retried meanwhile).
    if (me.isError)
      return (
        <div className="page">
          <h1>The console cannot load your session</h1>
          <FormError error={errorText(me.error)} />
          <button type="button" className="btn" onClick={() => void me.refetch()}>
            Try again
          </button>
        </div>
      );
    return <Spinner />;
  }
  if (!me.data.account) {
    if (location.startsWith("/invite/")) return <Route path="/invite/:token" component={AcceptInvitePage} />;
    return <OnboardingPage />;
  }
  return (
    <Shell>
      <Suspense fallback={<Spinner />}>
        <Switch>
          <Route path="/" component={() => <Redirect to="/inbox" replace />} />
          <Route path="/inbox/:id?" component={InboxPage} />
          <Route path="/contacts" component={ContactsPage} />
          <Route path="/contacts/import" component={ImportWizard} />
          <Route path="/contacts/:id" component={ContactPage} />
          <Route path="/campaigns" component={CampaignsPage} />
          <Route path="/campaigns/new" component={CampaignWizard} />
          <Route path="/campaigns/:id" component={CampaignView} />
          <Route path="/flows" component={FlowsPage} />
          <Route path="/flows/:id/runs/:runId?" component={RunsPage} />
          <Route path="/flows/:id" component={FlowEditorPage} />
          <Route path="/channel" component={ChannelPage} />
          <Route path="/settings/:tab?" component={SettingsPage} />
          <Route path="/invite/:token" component={AcceptInvitePage} />
          <Route>
            <div className="page">
              <h1>Page not found</h1>
            </div>
          </Route>
        </Switch>
      </Suspense>
    </Shell>
  );
}

export function App() {
  useUnauthorizedRedirect();
  useRefreshOnReconnect();
  return (
    <Switch>
      <Route path="/sign-in" component={SignInPage} />
      <Route path="/sign-up" component={SignUpPage} />
      <Route path="/forgot-password" component={ForgotPasswordPage} />
      <Route path="/reset-password" component={ResetPasswordPage} />
      <Route>
        <SignedIn />
      </Route>
    </Switch>
  );
}
