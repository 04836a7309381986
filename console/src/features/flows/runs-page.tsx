import { useQuery } from "@tanstack/react-query";
import { Link, useParams } from "wouter";
import { fullTime, shortTime } from "../../lib/format";
import { pollInterval } from "../../lib/live";
import type { RunEvent } from "../../lib/types";
import { Badge, Empty, PageHeader, Spinner } from "../../lib/ui";
import { fetchFlow, fetchRun, fetchRuns, flowKeys } from "./api";

const TONE: Record<string, string> = {
  active: "info",
  completed: "ok",
  handed_off: "warn",
  timed_out: "muted",
  failed: "bad",
};

function describe(e: RunEvent) {
  const p = e.payload ?? {};
  const bits: string[] = [];
  for (const key of [
    "node_type",
    "type",
    "text",
    "reply_id",
    "title",
    "note",
    "reason",
    "error",
    "message",
  ]) {
    const v = p[key];
    if (typeof v === "string" && v) bits.push(v);
  }
  return bits.join(" · ");
}

export function RunsPage() {
  const { id, runId } = useParams<{ id: string; runId?: string }>();
  const flow = useQuery({
    queryKey: flowKeys.flow(id),
    queryFn: () => fetchFlow(id),
  });
  const runs = useQuery({
    queryKey: flowKeys.runs(id),
    queryFn: () => fetchRuns(id),
    refetchInterval: pollInterval,
  });
  const detail = useQuery({
    queryKey: flowKeys.run(id, runId),
    enabled: Boolean(runId),
    queryFn: () => fetchRun(id, runId ?? ""),
    refetchInterval: pollInterval,
  });

  return (
    <div className="page">
      <PageHeader
        title={flow.data ? `Runs of ${flow.data.name}` : "Runs"}
        subtitle={<Link href={`/flows/${id}`}>← Back to the editor</Link>}
      />
      <div className="split">
        <section className="card split-list" aria-label="Runs">
          {runs.isPending ? (
            <Spinner />
          ) : !runs.data?.length ? (
            <Empty title="No runs yet">A run starts when a customer triggers the active flow.</Empty>
          ) : (
            <ul className="run-list">
              {runs.data.map((r) => (
                <li key={r.id}>
                  <Link
                    href={`/flows/${id}/runs/${r.id}`}
                    className={`run-item${r.id === runId ? " active" : ""}`}
                    aria-current={r.id === runId ? "true" : undefined}
                  >
                    <Badge tone={TONE[r.status] ?? "neutral"}>{r.status.replace("_", " ")}</Badge>
                    <span className="run-node">{r.current_node_key ?? r.end_reason ?? ""}</span>
                    <span className="muted">{shortTime(r.started_at)}</span>
                  </Link>
                </li>
              ))}
            </ul>
          )}
        </section>
        <section className="card split-detail" aria-label="Run events">
          {!runId ? (
            <Empty title="Select a run">Its events show what the bot did, step by step.</Empty>
          ) : detail.isPending ? (
            <Spinner />
          ) : detail.data ? (
            <>
              <h2>
                Run{" "}
                <Badge tone={TONE[detail.data.run.status] ?? "neutral"}>
                  {detail.data.run.status.replace("_", " ")}
                </Badge>
              </h2>
              <dl className="facts">
                {detail.data.run.conversation_id ? (
                  <>
                    <dt>Conversation</dt>
                    <dd>
                      <Link href={`/inbox/${detail.data.run.conversation_id}`}>Open in the inbox</Link>
                    </dd>
                  </>
                ) : null}
                <dt>Started</dt>
                <dd>{fullTime(detail.data.run.started_at)}</dd>
                {detail.data.run.end_reason ? (
                  <>
                    <dt>End reason</dt>
                    <dd>{detail.data.run.end_reason}</dd>
                  </>
                ) : null}
                {Object.keys(detail.data.run.vars ?? {}).length ? (
                  <>
                    <dt>Variables</dt>
                    <dd>
                      {Object.entries(detail.data.run.vars).map(([k, v]) => (
                        <div key={k}>
                          <code>{k}</code> = {String(v)}
                        </div>
                      ))}
                    </dd>
                  </>
                ) : null}
              </dl>
              <ol className="timeline" aria-label="Events">
                {detail.data.events.map((e) => (
                  <li key={e.id} className={`timeline-item ev-${e.event_type}`}>
                    <span className="timeline-type">{e.event_type.replace("_", " ")}</span>
                    {e.node_key ? <code className="timeline-node">{e.node_key}</code> : null}
                    <span className="timeline-text">{describe(e)}</span>
                    <time className="muted" dateTime={e.created_at}>
                      {shortTime(e.created_at)}
                    </time>
                  </li>
                ))}
              </ol>
            </>
          ) : null}
        </section>
      </div>
    </div>
  );
}
