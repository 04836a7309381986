import { Link, useParams } from "wouter";
import { useIsOwner } from "../../lib/session";
import { PageHeader } from "../../lib/ui";
import { ApiKeysSettings } from "./api-keys";
import { AutomationSettings } from "./automation";
import { CannedSettings } from "./canned";
import { TeamSettings } from "./team";
import { TemplateSettings } from "./templates";
import { WebhookSettings } from "./webhooks";

const TABS = [
  { id: "team", label: "Team", owner: false },
  { id: "templates", label: "Templates", owner: false },
  { id: "canned", label: "Canned responses", owner: false },
  { id: "automation", label: "Automation", owner: false },
  { id: "api-keys", label: "API keys", owner: true },
  { id: "webhooks", label: "Webhooks", owner: true },
] as const;

export function SettingsPage() {
  const { tab = "team" } = useParams<{ tab?: string }>();
  const owner = useIsOwner();
  const visible = TABS.filter((t) => owner || !t.owner);
  const current = visible.find((t) => t.id === tab) ?? visible[0];
  return (
    <div className="page">
      <PageHeader title="Settings" />
      <nav className="settings-tabs" aria-label="Settings sections">
        {visible.map((t) => (
          <Link
            key={t.id}
            href={`/settings/${t.id}`}
            className={`tab${t.id === current?.id ? " active" : ""}`}
            aria-current={t.id === current?.id ? "page" : undefined}
          >
            {t.label}
          </Link>
        ))}
      </nav>
      {current?.id === "team" ? <TeamSettings /> : null}
      {current?.id === "templates" ? <TemplateSettings /> : null}
      {current?.id === "canned" ? <CannedSettings /> : null}
      {current?.id === "automation" ? <AutomationSettings /> : null}
      {current?.id === "api-keys" ? <ApiKeysSettings /> : null}
      {current?.id === "webhooks" ? <WebhookSettings /> : null}
    </div>
  );
}
