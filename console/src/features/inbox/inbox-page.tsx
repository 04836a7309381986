import { useQueryClient } from "@tanstack/react-query";
import { useVirtualizer } from "@tanstack/react-virtual";
import { useEffect, useRef, useState } from "react";
import { Link, useLocation, useParams } from "wouter";

import { contactLabel, initials, messagePreview, shortTime } from "../../lib/format";
import { useMe } from "../../lib/session";
import type { Conversation } from "../../lib/types";
import { Empty, Spinner } from "../../lib/ui";
import { type ConversationFilters, inboxKeys, updateConversation, useConversations, useCounts } from "./api";
import { COMPOSE_EVENT } from "./composer";
import { Thread } from "./thread";

const STATUS_TABS = [
  { value: "open", label: "Open" },
  { value: "pending", label: "Pending" },
  { value: "closed", label: "Closed" },
  { value: "all", label: "All" },
] as const;

function ConversationItem({
  c,
  active,
  index,
  start,
  measure,
}: {
  c: Conversation;
  active: boolean;
  index: number;
  start: number;
  measure: (el: Element | null) => void;
}) {
  const name = contactLabel(c.contact);
  const unread = c.unread_count ?? 0;
  return (
    <li ref={measure} data-index={index} className="conv-row" style={{ transform: `translateY(${start}px)` }}>
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

/**
 * Only the rows in view (and a few around) are in the page, however many are loaded; nearing the
 * end loads the next page.
 */
function VirtualConversationList(props: {
  list: Conversation[];
  activeId: string | undefined;
  hasMore: boolean;
  loadingMore: boolean;
  loadMore: () => void;
}) {
  const scroller = useRef<HTMLDivElement>(null);
  const virtualizer = useVirtualizer({
    count: props.list.length,
    getScrollElement: () => scroller.current,
    estimateSize: () => 66,
    overscan: 10,
    getItemKey: (index) => props.list[index]?.id ?? index,
  });
  const items = virtualizer.getVirtualItems();
  const lastIndex = items.at(-1)?.index ?? 0;
  const { hasMore, loadingMore, loadMore, list } = props;
  useEffect(() => {
    if (hasMore && !loadingMore && lastIndex >= list.length - 15) loadMore();
  }, [hasMore, loadingMore, loadMore, lastIndex, list.length]);
  return (
    <div className="conv-list" ref={scroller}>
      <ul className="conv-virtual" style={{ height: virtualizer.getTotalSize() }} aria-busy={loadingMore}>
        {items.map((item) => {
          const c = list[item.index];
          if (!c) return null;
          return (
            <ConversationItem
              key={c.id}
              c={c}
              active={c.id === props.activeId}
              index={item.index}
              start={item.start}
              measure={virtualizer.measureElement}
            />
          );
        })}
      </ul>
      {loadingMore ? <Spinner label="Loading more" /> : null}
    </div>
  );
}

const SHORTCUTS: Array<[string, string]> = [
  ["j", "Next conversation"],
  ["k", "Previous conversation"],
  ["r", "Reply"],
  ["n", "Internal note"],
  ["a", "Assign to me"],
  ["c", "Close the conversation"],
  ["/", "Search"],
  ["?", "This list"],
];

/** Whether a key press belongs to a field being typed in (shortcuts leave it alone). */
const typing = (target: EventTarget | null) =>
  target instanceof HTMLElement &&
  (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName));

function ShortcutsDialog({ open, onClose }: { open: boolean; onClose: () => void }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    if (open && !ref.current?.open) ref.current?.showModal();
    if (!open && ref.current?.open) ref.current.close();
  }, [open]);
  return (
    <dialog ref={ref} className="shortcuts-dialog" aria-labelledby="shortcuts-title" onClose={onClose}>
      <h2 id="shortcuts-title">Keyboard shortcuts</h2>
      <dl className="shortcut-list">
        {SHORTCUTS.map(([key, label]) => (
          <div key={key}>
            <dt>
              <kbd>{key}</kbd>
            </dt>
            <dd>{label}</dd>
          </div>
        ))}
      </dl>
      <button type="button" className="btn btn-small" onClick={onClose}>
        Close
      </button>
    </dialog>
  );
}

export function InboxPage() {
  const { id } = useParams<{ id?: string }>();
  const [filters, setFilters] = useState<ConversationFilters>({ status: "open", assigned: "all", q: "" });
  const conversations = useConversations(filters);
  const counts = useCounts();
  // A server without status filtering lists every conversation: filter here too.
  const list = (conversations.data?.pages.flatMap((p) => p.conversations) ?? []).filter(
    (c) => filters.status === "all" || c.status === filters.status,
  );

  const [, navigate] = useLocation();
  const client = useQueryClient();
  const me = useMe();
  const [help, setHelp] = useState(false);
  const searchRef = useRef<HTMLInputElement>(null);
  // Keyboard shortcuts for a day of answering (the list: "?").
  const latest = useRef({ list, id, myId: me.data?.user.id });
  latest.current = { list, id, myId: me.data?.user.id };
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.ctrlKey || e.metaKey || e.altKey || typing(e.target)) return;
      const { list: items, id: current, myId } = latest.current;
      const index = items.findIndex((c) => c.id === current);
      const patch = (body: Parameters<typeof updateConversation>[1]) => {
        if (!current) return;
        void updateConversation(current, body).finally(() => {
          void client.invalidateQueries({ queryKey: inboxKeys.conversation(current) });
          void client.invalidateQueries({ queryKey: inboxKeys.conversations });
          void client.invalidateQueries({ queryKey: inboxKeys.counts });
        });
      };
      const go = (step: number) => {
        const next = items[index === -1 ? 0 : Math.min(items.length - 1, Math.max(0, index + step))];
        if (next) navigate(`/inbox/${next.id}`);
      };
      const actions: Record<string, () => void> = {
        j: () => go(1),
        k: () => go(-1),
        r: () => window.dispatchEvent(new CustomEvent(COMPOSE_EVENT, { detail: "reply" })),
        n: () => window.dispatchEvent(new CustomEvent(COMPOSE_EVENT, { detail: "note" })),
        a: () => myId && patch({ assigned_to: myId }),
        c: () => patch({ status: "closed" }),
        "/": () => searchRef.current?.focus(),
        "?": () => setHelp(true),
      };
      const action = actions[e.key];
      if (!action) return;
      e.preventDefault();
      action();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [client, navigate]);

  return (
    <div className={`inbox${id ? " has-selection" : ""}`}>
      <ShortcutsDialog open={help} onClose={() => setHelp(false)} />
      <section className="inbox-list" aria-label="Conversations">
        <div className="inbox-list-head">
          <h1>Inbox</h1>
          <input
            ref={searchRef}
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
          <VirtualConversationList
            list={list}
            activeId={id}
            hasMore={Boolean(conversations.hasNextPage)}
            loadingMore={conversations.isFetchingNextPage}
            loadMore={() => void conversations.fetchNextPage()}
          />
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
