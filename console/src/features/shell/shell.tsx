import { useQueryClient } from "@tanstack/react-query";
import {
  Bell,
  BellOff,
  Megaphone,
  MessageSquare,
  Moon,
  Settings,
  Smartphone,
  Sun,
  SunMoon,
  Users,
  Workflow,
} from "lucide-react";
import { type ReactNode, useEffect } from "react";
import { Link, useLocation } from "wouter";
import { useOnline } from "../../lib/connection";
import { useLiveMode } from "../../lib/live";
import { toggleNotifications, useNotifyState } from "../../lib/notify";
import { useMe } from "../../lib/session";
import { NEXT_THEME, setTheme, useTheme } from "../../lib/theme";
import { Icon } from "../../lib/ui";
import { signOut } from "../auth/api";
import { useCounts } from "../inbox/api";

const NAV = [
  { href: "/inbox", label: "Inbox", icon: MessageSquare },
  { href: "/contacts", label: "Contacts", icon: Users },
  { href: "/campaigns", label: "Campaigns", icon: Megaphone },
  { href: "/flows", label: "Flows", icon: Workflow },
  { href: "/channel", label: "Channel", icon: Smartphone },
  { href: "/settings", label: "Settings", icon: Settings },
];

const LIVE_LABELS = {
  stream: "Live",
  polling: "Live (polling)",
  connecting: "Connecting",
  offline: "Offline",
} as const;

const NOTIFY_LABELS = {
  unsupported: "Notifications are not supported by this browser",
  blocked: "Notifications are blocked in the browser's site settings",
  ask: "Turn on notifications",
  on: "Notifications on (turn off)",
  off: "Notifications off (turn on)",
} as const;

/** New messages in my conversations and new assignments: a notification and a sound. */
function NotifySwitch() {
  const state = useNotifyState();
  return (
    <button
      type="button"
      className="icon-btn theme-switch"
      aria-label={NOTIFY_LABELS[state]}
      title={NOTIFY_LABELS[state]}
      disabled={state === "unsupported" || state === "blocked"}
      onClick={() => void toggleNotifications()}
    >
      <Icon d={state === "on" ? Bell : BellOff} size={18} />
    </button>
  );
}

const THEME_LABELS = { system: "System theme", light: "Light theme", dark: "Dark theme" } as const;

/** Cycles system → light → dark; says which one is on. */
function ThemeSwitch() {
  const theme = useTheme();
  return (
    <button
      type="button"
      className="icon-btn theme-switch"
      aria-label={`${THEME_LABELS[theme]} (change)`}
      title={THEME_LABELS[theme]}
      onClick={() => setTheme(NEXT_THEME[theme])}
    >
      <Icon d={theme === "dark" ? Moon : theme === "light" ? Sun : SunMoon} size={18} />
    </button>
  );
}

export function ConnectionBanner() {
  const online = useOnline();
  if (online) return null;
  return (
    <div className="banner banner-offline" role="alert">
      Connection to the service lost. Retrying…
    </div>
  );
}

/** "(3) wa-inbox": the tab says how many conversations wait unread, wherever the console is. */
function useUnreadTitle() {
  const counts = useCounts();
  const unread = counts.data?.unread ?? 0;
  useEffect(() => {
    document.title = unread > 0 ? `(${unread}) wa-inbox` : "wa-inbox";
  }, [unread]);
}

export function Shell({ children }: { children: ReactNode }) {
  useUnreadTitle();
  const me = useMe();
  const [location, navigate] = useLocation();
  const client = useQueryClient();
  const online = useOnline();
  // One source of truth: the banner's lost connection wins over the stream's last state.
  const mode = useLiveMode();
  const live = online ? mode : "offline";

  const leave = async () => {
    await signOut().catch(() => {});
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
            <span className={`live-dot live-${live}`}>{LIVE_LABELS[live]}</span>
          </div>
          <div className="sidebar-switches">
            <NotifySwitch />
            <ThemeSwitch />
          </div>
          <button type="button" className="btn btn-ghost btn-small" onClick={leave}>
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
