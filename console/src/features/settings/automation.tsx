import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useEffect, useState } from "react";
import { useIsOwner, useMe } from "../../lib/session";
import { FormError, Spinner } from "../../lib/ui";
import { inboxKeys, useMembers } from "../inbox/api";
import {
  fetchBusinessHours,
  fetchSettings,
  saveBusinessHours,
  setAvailability,
  settingsKeys,
  updateSettings,
} from "./api";

interface Settings {
  agent_reply_pause_minutes: number;
  auto_assign: { mode: "off" | "round_robin" | "least_busy"; max_open_per_agent: number | null };
}

const DAYS = [
  ["mon", "Monday"],
  ["tue", "Tuesday"],
  ["wed", "Wednesday"],
  ["thu", "Thursday"],
  ["fri", "Friday"],
  ["sat", "Saturday"],
  ["sun", "Sunday"],
] as const;
type Day = (typeof DAYS)[number][0];

interface BusinessHours {
  timezone: string;
  weekly: Record<Day, [string, string][]>;
  holidays: string[];
  away_message: string | null;
  open_now: boolean;
}

/** "09:00-12:00, 13:00-17:30" -> [["09:00","12:00"],["13:00","17:30"]] (the server checks the times). */
const readRanges = (text: string) =>
  text
    .split(",")
    .map((r) => r.trim())
    .filter(Boolean)
    .map((r) => r.split("-").map((t) => t.trim()) as [string, string]);
const showRanges = (ranges: [string, string][] | undefined) =>
  (ranges ?? []).map((r) => r.join("-")).join(", ");

/** Settings → Automation: my availability, the bot's pause, auto-assignment, business hours. */
export function AutomationSettings() {
  return (
    <div className="settings-section">
      <Availability />
      <BotAndAssignment />
      <BusinessHoursForm />
    </div>
  );
}

function Availability() {
  const client = useQueryClient();
  const me = useMe();
  const members = useMembers();
  const mine = members.data?.find((m) => m.user_id === me.data?.user.id);
  const save = useMutation({
    mutationFn: setAvailability,
    onSettled: () => void client.invalidateQueries({ queryKey: inboxKeys.members }),
  });
  return (
    <section className="card">
      <h2>My availability</h2>
      <p className="muted">Auto-assignment gives conversations only to members who are online.</p>
      <label className="inline-select">
        <span>Availability</span>
        <select
          aria-label="My availability"
          value={mine?.availability ?? "online"}
          onChange={(e) => save.mutate(e.target.value as "online" | "away")}
          disabled={!mine || save.isPending}
        >
          <option value="online">Online</option>
          <option value="away">Away</option>
        </select>
      </label>
      <FormError error={save.error?.message} />
    </section>
  );
}

function BotAndAssignment() {
  const client = useQueryClient();
  const owner = useIsOwner();
  const settings = useQuery({
    queryKey: settingsKeys.settings,
    queryFn: () => fetchSettings<Settings>(),
  });
  const [pause, setPause] = useState("30");
  const [mode, setMode] = useState<Settings["auto_assign"]["mode"]>("off");
  const [cap, setCap] = useState("");
  useEffect(() => {
    if (!settings.data) return;
    setPause(String(settings.data.agent_reply_pause_minutes));
    setMode(settings.data.auto_assign.mode);
    setCap(settings.data.auto_assign.max_open_per_agent?.toString() ?? "");
  }, [settings.data]);
  const save = useMutation({
    mutationFn: () =>
      updateSettings({
        agent_reply_pause_minutes: Number(pause),
        auto_assign: { mode, max_open_per_agent: cap.trim() === "" ? null : Number(cap) },
      }),
    onSuccess: () => void client.invalidateQueries({ queryKey: settingsKeys.settings }),
  });
  if (settings.isPending) return <Spinner />;
  if (settings.isError) return <FormError error={settings.error.message} />;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  return (
    <section className="card">
      <h2>Bot and assignment</h2>
      <form className="form" onSubmit={submit} noValidate>
        <div className="field">
          <label htmlFor="pause-minutes">Pause the bot after an agent's message (minutes)</label>
          <input
            id="pause-minutes"
            type="number"
            min={0}
            value={pause}
            onChange={(e) => setPause(e.target.value)}
            disabled={!owner}
          />
          <p className="hint">0: an agent's message does not pause the bot.</p>
        </div>
        <div className="field">
          <label htmlFor="assign-mode">Auto-assignment</label>
          <select
            id="assign-mode"
            value={mode}
            onChange={(e) => setMode(e.target.value as Settings["auto_assign"]["mode"])}
            disabled={!owner}
          >
            <option value="off">Off</option>
            <option value="round_robin">Round robin</option>
            <option value="least_busy">Least busy</option>
          </select>
        </div>
        <div className="field">
          <label htmlFor="assign-cap">Most open conversations per member</label>
          <input
            id="assign-cap"
            type="number"
            min={1}
            value={cap}
            placeholder="No limit"
            onChange={(e) => setCap(e.target.value)}
            disabled={!owner}
          />
        </div>
        <FormError error={save.error?.message} />
        {owner ? (
          <button type="submit" className="btn btn-primary" disabled={save.isPending}>
            Save
          </button>
        ) : (
          <p className="muted">Only the account's owner changes these.</p>
        )}
        {save.isSuccess ? <p className="muted">Saved.</p> : null}
      </form>
    </section>
  );
}

function BusinessHoursForm() {
  const client = useQueryClient();
  const owner = useIsOwner();
  const hours = useQuery({
    queryKey: settingsKeys.businessHours,
    queryFn: () => fetchBusinessHours<BusinessHours>(),
  });
  const [timezone, setTimezone] = useState(() => Intl.DateTimeFormat().resolvedOptions().timeZone);
  const [days, setDays] = useState<Record<Day, string>>({
    mon: "09:00-17:00",
    tue: "09:00-17:00",
    wed: "09:00-17:00",
    thu: "09:00-17:00",
    fri: "09:00-17:00",
    sat: "",
    sun: "",
  });
  const [holidays, setHolidays] = useState("");
  const [away, setAway] = useState("");
  useEffect(() => {
    const h = hours.data;
    if (!h) return;
    setTimezone(h.timezone);
    setDays(Object.fromEntries(DAYS.map(([d]) => [d, showRanges(h.weekly[d])])) as Record<Day, string>);
    setHolidays(h.holidays.join(", "));
    setAway(h.away_message ?? "");
  }, [hours.data]);
  const save = useMutation({
    mutationFn: () =>
      saveBusinessHours({
        timezone,
        weekly: Object.fromEntries(DAYS.map(([d]) => [d, readRanges(days[d])])),
        holidays: holidays
          .split(/[\s,]+/)
          .map((d) => d.trim())
          .filter(Boolean),
        away_message: away.trim() === "" ? null : away,
      }),
    onSuccess: () => void client.invalidateQueries({ queryKey: ["business-hours"] }),
  });
  if (hours.isPending) return <Spinner />;
  if (hours.isError) return <FormError error={hours.error.message} />;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  return (
    <section className="card">
      <h2>Business hours</h2>
      <p className="muted">
        {hours.data
          ? hours.data.open_now
            ? "Open now."
            : "Closed now."
          : "Not set: the business counts as always open and no away message goes out."}
      </p>
      <form className="form" onSubmit={submit} noValidate>
        <div className="field">
          <label htmlFor="bh-timezone">Timezone</label>
          <input
            id="bh-timezone"
            list="bh-timezones"
            value={timezone}
            onChange={(e) => setTimezone(e.target.value)}
            disabled={!owner}
          />
          <datalist id="bh-timezones">
            {Intl.supportedValuesOf("timeZone").map((tz) => (
              <option key={tz} value={tz} />
            ))}
          </datalist>
        </div>
        {DAYS.map(([day, label]) => (
          <div className="field" key={day}>
            <label htmlFor={`bh-${day}`}>{label}</label>
            <input
              id={`bh-${day}`}
              value={days[day]}
              placeholder="Closed"
              onChange={(e) => setDays((all) => ({ ...all, [day]: e.target.value }))}
              disabled={!owner}
            />
          </div>
        ))}
        <p className="hint">Ranges like 09:00-12:00, 13:00-17:30; empty: closed all day.</p>
        <div className="field">
          <label htmlFor="bh-holidays">Holidays</label>
          <input
            id="bh-holidays"
            value={holidays}
            placeholder="2026-12-25, 2027-01-01"
            onChange={(e) => setHolidays(e.target.value)}
            disabled={!owner}
          />
        </div>
        <div className="field">
          <label htmlFor="bh-away">Away message</label>
          <textarea
            id="bh-away"
            rows={3}
            value={away}
            onChange={(e) => setAway(e.target.value)}
            disabled={!owner}
          />
          <p className="hint">
            Sent once per closed period to a customer whose message no flow answered; not within 5 minutes of
            an agent's reply. Empty: none.
          </p>
        </div>
        <FormError error={save.error?.message} />
        {owner ? (
          <button type="submit" className="btn btn-primary" disabled={save.isPending}>
            Save business hours
          </button>
        ) : null}
        {save.isSuccess ? <p className="muted">Saved.</p> : null}
      </form>
    </section>
  );
}
