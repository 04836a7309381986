import { useQueryClient } from "@tanstack/react-query";
import type { ReactNode } from "react";
import { Link, useLocation } from "wouter";
import { api } from "../../lib/api";
import { useOnline } from "../../lib/connection";
import { useLiveMode } from "../../lib/live";
import { useMe } from "../../lib/session";
import { Icon } from "../../lib/ui";

const NAV = [
  { href: "/inbox", label: "Inbox", icon: "M4 4h16v12H8l-4 4z" },
  { href: "/contacts", label: "Contacts", icon: "M12 12a4 4 0 1 0 0-8 4 4 0 0 0 0 8zm-7 8a7 7 0 0 1 14 0z" },
  { href: "/campaigns", label: "Campaigns", icon: "M3 11v2l13 5V6zM16 8a4 4 0 0 1 0 8M6 13l1 6h3l-1-5" },
  { href: "/flows", label: "Flows", icon: "M5 5h5v5H5zM14 14h5v5h-5zM7.5 10v4.5H14" },
  { href: "/channel", label: "Channel", icon: "M6 3h12v18H6zM10 18h4" },
  {
    href: "/settings",
    label: "Settings",
    icon: "M12 8a4 4 0 1 0 0 8 4 4 0 0 0 0-8zM3 12h2M19 12h2M12 3v2M12 19v2",
  },
];

export function ConnectionBanner() {
  const online = useOnline();
  if (online) return null;
  return (
    <div className="banner banner-offline" role="alert">
      Connection to the service lost. Retrying…
    </div>
  );
}

export function Shell({ children }: { children: ReactNode }) {
  const me = useMe();
  const [location, navigate] = useLocation();
  const client = useQueryClient();
  const live = useLiveMode();

  const signOut = async () => {
    await api("/api/auth/sign-out", { method: "POST", body: {}, allowUnauthorized: true }).catch(() => {});
    client.clear();
    navigate("/sign-in", { replace: true });
  };

  return (
    <div className="shell">
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <nav className="sidebar" aria-label="Main">
        <div className="brand" aria-hidden="true">
          <span className="brand-mark">wa</span>
          <span className="brand-name">inbox</span>
        </div>
        <ul>
          {NAV.map((item) => {
            const active = location === item.href || location.startsWith(`${item.href}/`);
            return (
              <li key={item.href}>
                <Link
                  href={item.href}
                  className={active ? "nav-link active" : "nav-link"}
                  aria-current={active ? "page" : undefined}
                >
                  <Icon d={item.icon} />
                  <span>{item.label}</span>
                </Link>
              </li>
            );
          })}
        </ul>
        <div className="sidebar-footer">
          <div className="whoami">
            <span className="whoami-name">{me.data?.user.name}</span>
            <span className="whoami-account">
              {me.data?.account?.name} · {me.data?.profile.role}
            </span>
            <span
              className={`live-dot live-${live}`}
              title={live === "stream" ? "Live" : live === "polling" ? "Live (polling)" : "Connecting"}
            >
              {live === "stream" ? "Live" : live === "polling" ? "Live (polling)" : "Connecting"}
            </span>
          </div>
          <button type="button" className="btn btn-ghost btn-small" onClick={signOut}>
            Sign out
          </button>
        </div>
      </nav>
      <div className="main-column">
        <ConnectionBanner />
        <main id="main" className="main" tabIndex={-1}>
          {children}
        </main>
      </div>
    </div>
  );
}
