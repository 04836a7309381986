import { useState } from "react";
import { Link, useParams } from "wouter";
import { contactLabel, initials, messagePreview, shortTime } from "../../lib/format";
import type { Conversation } from "../../lib/types";
import { Empty, Spinner } from "../../lib/ui";
import { type ConversationFilters, useConversations, useCounts } from "./inbox-api";
import { Thread } from "./thread";

const STATUS_TABS = [
  { value: "open", label: "Open" },
  { value: "pending", label: "Pending" },
  { value: "closed", label: "Closed" },
  { value: "all", label: "All" },
] as const;

function ConversationItem({ c, active }: { c: Conversation; active: boolean }) {
  const name = contactLabel(c.contact);
  const unread = c.unread_count ?? 0;
  return (
    <li>
      <Link
        href={`/inbox/${c.id}`}
        className={`conv-item${active ? " active" : ""}${unread ? " unread" : ""}`}
        aria-current={active ? "true" : undefined}
        aria-label={`${name}${unread ? `, ${unread} unread` : ""}: ${messagePreview(c.last_message)}`}
      >
        <span className="avatar" aria-hidden="true">
          {initials(name)}
        </span>
        <span className="conv-body">
          <span className="conv-top">
            <span className="conv-name">{name}</span>
            <span className="conv-time">{shortTime(c.last_message_at ?? c.created_at)}</span>
          </span>
          <span className="conv-bottom">
            <span className="conv-preview">
              {c.last_message?.direction === "outbound" ? "You: " : ""}
              {messagePreview(c.last_message)}
            </span>
            {unread ? <span className="unread-badge">{unread}</span> : null}
            {c.status === "pending" ? <span className="status-pill pending">Pending</span> : null}
          </span>
        </span>
      </Link>
    </li>
  );
}

export function InboxPage() {
  const { id } = useParams<{ id?: string }>();
  const [filters, setFilters] = useState<ConversationFilters>({ status: "open", assigned: "all", q: "" });
  const conversations = useConversations(filters);
  const counts = useCounts();
  // A server without status filtering lists every conversation: filter here too.
  const list = (conversations.data?.conversations ?? []).filter(
    (c) => filters.status === "all" || c.status === filters.status,
  );

  return (
    <div className={`inbox${id ? " has-selection" : ""}`}>
      <section className="inbox-list" aria-label="Conversations">
        <div className="inbox-list-head">
          <h1>Inbox</h1>
          <input
            type="search"
            className="search"
            placeholder="Search name, phone or text"
            aria-label="Search conversations"
            value={filters.q}
            onChange={(e) => setFilters((f) => ({ ...f, q: e.target.value }))}
          />
          <fieldset className="tabs">
            <legend className="sr-only">Status filter</legend>
            {STATUS_TABS.map((tab) => {
              const count = tab.value === "all" ? undefined : counts.data?.[tab.value];
              return (
                <button
                  key={tab.value}
                  type="button"
                  className={`tab${filters.status === tab.value ? " active" : ""}`}
                  aria-pressed={filters.status === tab.value}
                  onClick={() => setFilters((f) => ({ ...f, status: tab.value }))}
                >
                  {tab.label}
                  {count !== undefined ? <span className="tab-count">{count}</span> : null}
                </button>
              );
            })}
          </fieldset>
          <label className="inline-select">
            <span>Assigned</span>
            <select
              value={filters.assigned}
              onChange={(e) =>
                setFilters((f) => ({ ...f, assigned: e.target.value as ConversationFilters["assigned"] }))
              }
            >
              <option value="all">Anyone{counts.data ? "" : ""}</option>
              <option value="me">Me{counts.data ? ` (${counts.data.mine})` : ""}</option>
              <option value="none">Unassigned{counts.data ? ` (${counts.data.unassigned})` : ""}</option>
            </select>
          </label>
        </div>
        {conversations.isPending ? (
          <Spinner />
        ) : list.length === 0 ? (
          <Empty title="No conversations here">
            When a customer writes to your WhatsApp number, the conversation appears here.
          </Empty>
        ) : (
          <ul className="conv-list">
            {list.map((c) => (
              <ConversationItem key={c.id} c={c} active={c.id === id} />
            ))}
          </ul>
        )}
      </section>
      {id ? (
        <Thread key={id} conversationId={id} />
      ) : (
        <section className="thread thread-empty" aria-label="Conversation">
          <Empty title="Pick a conversation">Select a conversation on the left to read and answer it.</Empty>
        </section>
      )}
    </div>
  );
}
