import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useVirtualizer } from "@tanstack/react-virtual";
import { Check, CheckCheck, CircleAlert, Clock } from "lucide-react";
import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from "react";
import { Link } from "wouter";

import { contactLabel, dayKey, dayLabel, fullTime, shortTime } from "../../lib/format";
import { useMe } from "../../lib/session";
import type { Conversation, ConversationStatus, Message } from "../../lib/types";
import { FormError, ICONS, Icon, Spinner } from "../../lib/ui";
import {
  inboxKeys,
  markConversationRead,
  sendReaction,
  updateConversation,
  useConversation,
  useMembers,
  useMessages,
} from "./api";
import { AutomationBar } from "./automation-bar";
import { Composer } from "./composer";
import { ContactPanel } from "./contact-panel";
import { EmojiPopover } from "./emoji-popover";

const QUICK_EMOJI = ["👍", "❤️", "😂", "😮", "🙏", "✅"];

function Ticks({ status }: { status: string }) {
  const label =
    status === "read"
      ? "Read"
      : status === "delivered"
        ? "Delivered"
        : status === "sent"
          ? "Sent"
          : status === "failed"
            ? "Not delivered"
            : "Sending";
  const glyph =
    status === "read" || status === "delivered" ? (
      <CheckCheck size={15} aria-hidden="true" />
    ) : status === "sent" ? (
      <Check size={15} aria-hidden="true" />
    ) : status === "failed" ? (
      <CircleAlert size={15} aria-hidden="true" />
    ) : (
      <Clock size={14} aria-hidden="true" />
    );
  return (
    <span className={`ticks ticks-${status}`} role="img" aria-label={label} title={label}>
      {glyph}
    </span>
  );
}

/** A picture at least a readable size in the thread; a click shows it whole in a viewer. */
function ImageWithViewer({ url, alt }: { url: string; alt: string }) {
  const dialog = useRef<HTMLDialogElement>(null);
  return (
    <>
      <button
        type="button"
        className="media-link"
        aria-label="View image"
        onClick={() => dialog.current?.showModal()}
      >
        <img src={url} alt={alt} className="media-image" loading="lazy" />
      </button>
      <dialog
        ref={dialog}
        className="image-viewer"
        aria-label="Image viewer"
        onClick={(e) => {
          if (e.target === e.currentTarget) dialog.current?.close();
        }}
        onKeyDown={(e) => {
          if (e.key === "Escape") dialog.current?.close();
        }}
      >
        <img src={url} alt={alt} />
        <div className="image-viewer-actions">
          <a href={url} target="_blank" rel="noreferrer" className="btn btn-small">
            Open original
          </a>
          <button type="button" className="btn btn-small" onClick={() => dialog.current?.close()}>
            Close
          </button>
        </div>
      </dialog>
    </>
  );
}

/** What a bot's interactive message offered: its reply buttons, or its list's rows. */
function InteractiveChoices({ m }: { m: Message }) {
  const interactive = (m.payload as { interactive?: Record<string, unknown> } | null | undefined)
    ?.interactive;
  if (!interactive) return null;
  const action = (interactive.action ?? {}) as {
    buttons?: Array<{ reply?: { id?: string; title?: string } }>;
    button?: string;
    sections?: Array<{ title?: string; rows?: Array<{ id?: string; title?: string; description?: string }> }>;
  };
  const body = (interactive.body as { text?: string } | undefined)?.text;
  const buttons = (action.buttons ?? []).map((b) => b.reply?.title).filter(Boolean) as string[];
  const rows = (action.sections ?? []).flatMap((section) =>
    (section.rows ?? []).map((row) => ({ ...row, section: section.title })),
  );
  return (
    <>
      {body && !m.text ? <p className="bubble-text">{body}</p> : null}
      {buttons.length ? (
        <ul className="choice-buttons" aria-label="Buttons offered">
          {buttons.map((title) => (
            <li key={title}>{title}</li>
          ))}
        </ul>
      ) : null}
      {rows.length ? (
        <div className="choice-list">
          {action.button ? <p className="choice-list-title">{action.button}</p> : null}
          <ul aria-label="List offered">
            {rows.map((row) => (
              <li key={`${row.section ?? ""}:${row.id ?? row.title}`}>
                <span>{row.title}</span>
                {row.description ? <span className="muted">{row.description}</span> : null}
              </li>
            ))}
          </ul>
        </div>
      ) : null}
    </>
  );
}

function MediaPreview({ m }: { m: Message }) {
  const media = m.media;
  if (!media) return null;
  const url = media.url;
  if (media.status === "failed")
    return <p className="media-missing">The attachment could not be downloaded.</p>;
  if (!url)
    return (
      <p className="media-missing">
        {media.status === "pending" ? "Downloading attachment…" : `${m.type} attachment`}
      </p>
    );
  if (m.type === "image" || m.type === "sticker") {
    return <ImageWithViewer url={url} alt={media.caption || "Image from the conversation"} />;
  }
  if (m.type === "video")
    return (
      <video src={url} controls className="media-image" aria-label="Video">
        <track kind="captions" />
      </video>
    );
  if (m.type === "audio")
    return (
      <audio src={url} controls aria-label="Audio message">
        <track kind="captions" />
      </audio>
    );
  return (
    <a href={url} className="media-doc" download={media.filename ?? true}>
      <Icon d={ICONS.file} size={18} /> {media.filename ?? "Document"}
    </a>
  );
}

function Bubble(props: {
  m: Message;
  onReact: (m: Message, emoji: string) => void;
  myId: string | undefined;
  /** The name of the agent who sent an outbound message or wrote a note. */
  author?: string;
  /** Its place in the virtual list: measured by `rowRef`, drawn at `start`. */
  index: number;
  start: number;
  rowRef: (el: Element | null) => void;
}) {
  const { m } = props;
  const row = {
    ref: props.rowRef,
    "data-index": props.index,
    style: { top: props.start },
  };
  const [picking, setPicking] = useState(false);
  const [pickingMore, setPickingMore] = useState(false);
  const closeMore = useCallback(() => setPickingMore(false), []);
  const mine = m.reactions?.find((r) => r.actor_type === "agent" && r.actor_id === props.myId)?.emoji;
  if (m.type === "note" || m.direction === "internal") {
    return (
      <li className="bubble-row note-row" {...row}>
        <div className="bubble note">
          <span className="note-label">Internal note{props.author ? ` · ${props.author}` : ""}</span>
          <p className="bubble-text">{m.text}</p>
          <span className="bubble-meta">{shortTime(m.created_at)}</span>
        </div>
      </li>
    );
  }
  const outbound = m.direction === "outbound";
  const grouped = new Map<string, number>();
  for (const r of m.reactions ?? []) grouped.set(r.emoji, (grouped.get(r.emoji) ?? 0) + 1);
  return (
    <li className={`bubble-row ${outbound ? "out" : "in"}`} data-message-id={m.id} {...row}>
      <div
        className={`bubble ${outbound ? "out" : "in"}${m.sender_type === "bot" ? " bot" : ""}${m.status === "failed" ? " failed" : ""}`}
      >
        {m.sender_type === "bot" ? <span className="bot-label">Bot</span> : null}
        {outbound && m.sender_type === "agent" && props.author ? (
          <span className="author-label">{props.author}</span>
        ) : null}
        {m.type === "template" ? <span className="bot-label">Template</span> : null}
        <MediaPreview m={m} />
        {m.text || m.media?.caption ? <p className="bubble-text">{m.text ?? m.media?.caption}</p> : null}
        {!m.text && m.interactive?.title ? <p className="bubble-text">{m.interactive.title}</p> : null}
        <InteractiveChoices m={m} />
        {m.type === "unsupported" ? <p className="bubble-text muted">Unsupported message</p> : null}
        <span className="bubble-meta">
          <time dateTime={m.created_at} title={fullTime(m.created_at)}>
            {shortTime(m.created_at)}
          </time>
          {outbound ? <Ticks status={m.status} /> : null}
        </span>
        {grouped.size ? (
          <ul className="reactions" aria-label="Reactions">
            {[...grouped].map(([emoji, count]) => (
              <li key={emoji} className="reaction">
                {emoji}
                {count > 1 ? count : ""}
              </li>
            ))}
          </ul>
        ) : null}
      </div>
      {m.message_id ? (
        <div className="bubble-tools">
          <button
            type="button"
            className="icon-btn"
            aria-label="React to message"
            aria-expanded={picking}
            onClick={() => setPicking((p) => !p)}
          >
            <Icon d={ICONS.smile} size={18} />
          </button>
          {picking ? (
            <fieldset className="emoji-picker">
              <legend className="sr-only">Choose a reaction</legend>
              {QUICK_EMOJI.map((emoji) => (
                <button
                  key={emoji}
                  type="button"
                  className={`emoji-btn${mine === emoji ? " chosen" : ""}`}
                  aria-label={mine === emoji ? `Remove reaction ${emoji}` : `React with ${emoji}`}
                  onClick={() => {
                    setPicking(false);
                    props.onReact(m, mine === emoji ? "" : emoji);
                  }}
                >
                  {emoji}
                </button>
              ))}
              <button
                type="button"
                className="emoji-btn"
                aria-label="More reactions"
                aria-expanded={pickingMore}
                onClick={() => setPickingMore((p) => !p)}
              >
                <Icon d={ICONS.plus} size={16} />
              </button>
            </fieldset>
          ) : null}
          {picking && pickingMore ? (
            <EmojiPopover
              label="Reactions"
              onPick={(emoji) => {
                setPicking(false);
                props.onReact(m, emoji === mine ? "" : emoji);
              }}
              onClose={closeMore}
            />
          ) : null}
        </div>
      ) : null}
    </li>
  );
}

type Row = { kind: "day"; key: string; label: string } | { kind: "message"; key: string; m: Message };

/**
 * The thread's rows: each message, and a day separator before the first message of each day. While
 * older pages remain, the oldest loaded message has no separator above it (its day may go on in the
 * older page), so the rows already shown never change when a page comes in above them.
 */
function threadRows(messages: Message[], complete: boolean): Row[] {
  const rows: Row[] = [];
  messages.forEach((m, i) => {
    const previous = messages[i - 1];
    if (previous ? dayKey(previous.created_at) !== dayKey(m.created_at) : complete)
      rows.push({ kind: "day", key: `day:${m.id}`, label: dayLabel(m.created_at) });
    rows.push({ kind: "message", key: m.id, m });
  });
  return rows;
}

/** How near the end counts as at the end (new messages then scroll into view). */
const AT_END_PX = 48;

/**
 * The messages, virtualised: only the rows in view (and a few around) are in the page, however long
 * the thread. Opened at the newest message; a new message scrolls into view while at the end; pages
 * of older messages load as the top comes near and keep the first row in view where it was.
 */
function MessageList(props: {
  messages: Message[];
  hasOlder: boolean;
  loadingOlder: boolean;
  loadOlder: () => unknown;
  myId: string | undefined;
  memberNames: Map<string, string>;
  onReact: (m: Message, emoji: string) => void;
  /** Set when the agent sends: the next new message is scrolled to even from above. */
  follow: { current: boolean };
}) {
  const { messages, hasOlder, loadingOlder, loadOlder, follow } = props;
  const rows = useMemo(() => threadRows(messages, !hasOlder), [messages, hasOlder]);
  const scroller = useRef<HTMLDivElement>(null);
  const virtualizer = useVirtualizer({
    count: rows.length,
    getScrollElement: () => scroller.current,
    estimateSize: (i) => (rows[i]?.kind === "day" ? 44 : 64),
    getItemKey: (i) => rows[i]?.key ?? i,
    overscan: 8,
    paddingStart: 16,
    paddingEnd: 16,
    // Rows put above keep what is in view; rows added below are followed while at the end.
    anchorTo: "end",
    followOnAppend: true,
    scrollEndThreshold: AT_END_PX,
  });
  const pinned = useRef(true);
  const opened = useRef(false);
  const newestId = messages.at(-1)?.id;
  useLayoutEffect(() => {
    if (!newestId) return;
    if (!opened.current || follow.current) {
      opened.current = true;
      follow.current = false;
      pinned.current = true;
      virtualizer.scrollToEnd();
    }
  }, [newestId, follow, virtualizer]);
  // At the end, the thread stays there when its box shrinks (the header or composer growing).
  useEffect(() => {
    const el = scroller.current;
    if (!el) return;
    const observer = new ResizeObserver(() => {
      if (pinned.current) virtualizer.scrollToEnd();
    });
    observer.observe(el);
    return () => observer.disconnect();
  }, [virtualizer]);
  const loadIfNearTop = () => {
    const el = scroller.current;
    if (!el || !opened.current || !hasOlder || loadingOlder) return;
    if (el.scrollTop < Math.max(1500, el.clientHeight * 2)) void loadOlder();
  };
  const onScroll = () => {
    const el = scroller.current;
    if (!el) return;
    pinned.current = el.scrollHeight - el.clientHeight - el.scrollTop < AT_END_PX;
    loadIfNearTop();
  };
  // A page that came in short of filling the space above: the next one.
  const wasLoading = useRef(false);
  useEffect(() => {
    if (wasLoading.current && !loadingOlder) loadIfNearTop();
    wasLoading.current = loadingOlder;
  });
  // New messages are announced; rows scrolled into the page are not.
  const firstNewest = useRef(newestId);
  const newest = messages.at(-1);
  const announcement =
    newest && newest.id !== firstNewest.current
      ? `${newest.direction === "inbound" ? "New message" : "Sent"}: ${newest.text ?? newest.type}`
      : "";

  return (
    <div className="messages" ref={scroller} onScroll={onScroll}>
      {loadingOlder ? (
        <p className="older-loading" role="status">
          <span>Loading older messages…</span>
        </p>
      ) : null}
      <p className="sr-only" aria-live="polite">
        {announcement}
      </p>
      <ol className="message-rows" aria-label="Messages" style={{ height: virtualizer.getTotalSize() }}>
        {virtualizer.getVirtualItems().map((item) => {
          const row = rows[item.index];
          if (!row) return null;
          if (row.kind === "day")
            return (
              <li
                key={row.key}
                ref={virtualizer.measureElement}
                data-index={item.index}
                className="day-separator"
                style={{ top: item.start }}
              >
                <span>{row.label}</span>
              </li>
            );
          const m = row.m;
          return (
            <Bubble
              key={row.key}
              m={m}
              myId={props.myId}
              author={m.sender_user_id ? props.memberNames.get(m.sender_user_id) : undefined}
              onReact={props.onReact}
              index={item.index}
              start={item.start}
              rowRef={virtualizer.measureElement}
            />
          );
        })}
      </ol>
    </div>
  );
}

export function Thread(props: { conversationId: string }) {
  const client = useQueryClient();
  const me = useMe();
  const members = useMembers();
  const messages = useMessages(props.conversationId);
  // The conversation's own query: the list may be filtered, paged or behind.
  const own = useConversation(props.conversationId);
  const conversation = own.data;
  const [showContact, setShowContact] = useState(false);
  // What opening the conversation already tried to mark read: a failure is not retried in a loop.
  const autoRead = useRef("");
  const follow = useRef(false);
  const { hasOlder, loadingOlder, loadOlder } = messages;

  const refresh = () => {
    void client.invalidateQueries({ queryKey: inboxKeys.messages(props.conversationId) });
    void client.invalidateQueries({ queryKey: inboxKeys.conversations });
    void client.invalidateQueries({ queryKey: inboxKeys.counts });
    void client.invalidateQueries({ queryKey: inboxKeys.conversation(props.conversationId) });
  };

  const react = useMutation({
    mutationFn: (input: { m: Message; emoji: string }) => sendReaction(input.m.id, input.emoji),
    onSettled: refresh,
  });
  const patch = useMutation({
    mutationFn: (body: { status?: ConversationStatus; assigned_to?: string | null }) =>
      updateConversation(props.conversationId, body),
    // The select shows the choice at once, and the service's answer after.
    onMutate: (body) => {
      const key = inboxKeys.conversation(props.conversationId);
      void client.cancelQueries({ queryKey: key });
      const before = client.getQueryData<Conversation>(key);
      if (before) client.setQueryData<Conversation>(key, { ...before, ...body });
      return { before };
    },
    onError: (_error, _body, context) => {
      if (context?.before) client.setQueryData(inboxKeys.conversation(props.conversationId), context.before);
    },
    onSuccess: (answer) =>
      client.setQueryData(inboxKeys.conversation(props.conversationId), answer.conversation),
    onSettled: refresh,
  });
  const markRead = useMutation({
    mutationFn: () => markConversationRead(props.conversationId),
    onSettled: refresh,
  });

  const unread = conversation?.unread_count ?? 0;
  const lastMessageId = conversation?.last_message?.id ?? "";
  const { mutate: markReadNow, isPending: marking } = markRead;
  // Opening a conversation reads it, as in any messenger (once per new customer message).
  useEffect(() => {
    const key = `${props.conversationId}:${lastMessageId}`;
    if (unread > 0 && !marking && autoRead.current !== key) {
      autoRead.current = key;
      markReadNow();
    }
  }, [unread, marking, markReadNow, props.conversationId, lastMessageId]);

  const name = conversation ? contactLabel(conversation.contact) : "Conversation";
  const memberNames = new Map((members.data ?? []).map((m) => [m.user_id, m.name]));
  const windowOpen =
    conversation?.window_expires_at === undefined
      ? true
      : conversation.window_expires_at !== null && new Date(conversation.window_expires_at) > new Date();

  return (
    <>
      <section className="thread" aria-label={`Conversation with ${name}`}>
        <header className="thread-head">
          <Link href="/inbox" className="icon-btn back-btn" aria-label="Back to conversations">
            <Icon d={ICONS.back} />
          </Link>
          <div className="thread-title">
            <h2>{name}</h2>
            {conversation?.contact.phone ? (
              <span className="muted">+{conversation.contact.phone}</span>
            ) : null}
          </div>
          <div className="thread-actions">
            <label className="inline-select">
              <span className="sr-only">Status</span>
              <select
                aria-label="Status"
                value={conversation?.status ?? "open"}
                onChange={(e) => patch.mutate({ status: e.target.value as ConversationStatus })}
              >
                <option value="open">Open</option>
                <option value="pending">Pending</option>
                <option value="closed">Closed</option>
              </select>
            </label>
            <label className="inline-select">
              <span className="sr-only">Assignee</span>
              <select
                aria-label="Assignee"
                value={conversation?.assigned_to ?? ""}
                onChange={(e) => patch.mutate({ assigned_to: e.target.value || null })}
              >
                <option value="">Unassigned</option>
                {members.data?.map((m) => (
                  <option key={m.user_id} value={m.user_id}>
                    {m.user_id === me.data?.user.id ? `${m.name} (me)` : m.name}
                  </option>
                ))}
              </select>
            </label>
            <button
              type="button"
              className="btn btn-small"
              onClick={() => markRead.mutate()}
              disabled={markRead.isPending}
            >
              Mark read
            </button>
            <button
              type="button"
              className="btn btn-small contact-toggle"
              aria-expanded={showContact}
              aria-controls="contact-panel"
              onClick={() => setShowContact((s) => !s)}
            >
              Contact
            </button>
          </div>
        </header>
        <FormError
          error={patch.error ? `Could not update the conversation: ${patch.error.message}` : undefined}
        />
        <FormError error={react.error ? `Reaction failed: ${react.error.message}` : undefined} />
        <AutomationBar conversation={conversation} members={members.data} onChanged={refresh} />
        {conversation?.handoff_note ? (
          <p className="handoff-note">
            <strong>Handed off:</strong> {conversation.handoff_note}
          </p>
        ) : null}
        {messages.isPending ? (
          <Spinner />
        ) : (
          <MessageList
            messages={messages.data ?? []}
            hasOlder={hasOlder}
            loadingOlder={loadingOlder}
            loadOlder={loadOlder}
            myId={me.data?.user.id}
            memberNames={memberNames}
            onReact={(msg, emoji) => react.mutate({ m: msg, emoji })}
            follow={follow}
          />
        )}
        <Composer
          conversationId={props.conversationId}
          windowOpen={windowOpen}
          onSent={() => {
            follow.current = true;
            refresh();
          }}
        />
      </section>
      {conversation ? (
        <ContactPanel
          contact={conversation.contact}
          conversation={conversation}
          open={showContact}
          onClose={() => setShowContact(false)}
        />
      ) : null}
    </>
  );
}
