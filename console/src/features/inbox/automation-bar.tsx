import { useMutation } from "@tanstack/react-query";

import { shortTime } from "../../lib/format";
import type { Conversation, Member } from "../../lib/types";
import { Badge, FormError } from "../../lib/ui";
import { updateConversation } from "./api";

const REASONS: Record<string, string> = {
  agent_reply: "an agent replied",
  assigned: "assigned to a person",
  agent_started: "an agent started it",
  manual: "paused by hand",
};

/**
 * The conversation's automation (whether flows may start here) with pause and
 * resume, and the assignee's availability.
 */
export function AutomationBar(props: {
  conversation: Conversation | undefined;
  members: Member[] | undefined;
  onChanged: () => void;
}) {
  const { conversation } = props;
  const change = useMutation({
    mutationFn: (automation: { state: "paused" } | { state: "active" }) =>
      updateConversation(conversation?.id ?? "", { automation }),
    onSettled: props.onChanged,
  });
  const automation = conversation?.automation;
  if (!conversation || !automation) return null;
  const paused = automation.state === "paused";
  const assignee = props.members?.find((m) => m.user_id === conversation.assigned_to);
  return (
    <section className="automation-bar" aria-label="Automation">
      <span className="automation-state" data-state={automation.state}>
        {paused ? (
          <>
            <Badge tone="warn">Bot paused</Badge>{" "}
            <span className="muted">
              {automation.reason ? REASONS[automation.reason] : ""}
              {automation.until ? ` · until ${shortTime(automation.until)}` : " · until resumed"}
            </span>
          </>
        ) : (
          <Badge tone="ok">Bot active</Badge>
        )}
      </span>
      {paused ? (
        <button
          type="button"
          className="btn btn-small"
          onClick={() => change.mutate({ state: "active" })}
          disabled={change.isPending}
        >
          Resume bot
        </button>
      ) : (
        <button
          type="button"
          className="btn btn-small"
          onClick={() => change.mutate({ state: "paused" })}
          disabled={change.isPending}
        >
          Pause bot
        </button>
      )}
      {assignee ? (
        <span className="assignee-availability" data-availability={assignee.availability ?? "online"}>
          {assignee.name}: {assignee.availability === "away" ? "away" : "online"}
        </span>
      ) : null}
      <FormError error={change.error ? `Could not change the bot: ${change.error.message}` : undefined} />
    </section>
  );
}
