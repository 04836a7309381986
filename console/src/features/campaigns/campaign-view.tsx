import { useInfiniteQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useParams } from "wouter";
import { RECIPIENT_STATUSES } from "../../../../src/db/schema/recipient-statuses.js";
import { errorText } from "../../lib/api";
import { fullTime } from "../../lib/format";
import { pollInterval } from "../../lib/live";
import { Badge, FormError, PageHeader, Spinner } from "../../lib/ui";
import { campaignAction, campaignKeys, fetchRecipients, recipientsCsvUrl, useCampaign } from "./api";
import { Progress, STATUS_TONE } from "./campaigns-page";

/** The recipients' counts shown: every status but `sending` (claimed, on its way). */
const COUNTS = RECIPIENT_STATUSES.filter((status) => status !== "sending");

export function CampaignView() {
  const { id = "" } = useParams<{ id: string }>();
  const client = useQueryClient();
  const campaign = useCampaign(id);
  const [status, setStatus] = useState("");
  const [error, setError] = useState<string>();
  // Pages of 100 by the API's cursor; "Load more" adds the next (kept live while shown).
  const recipients = useInfiniteQuery({
    queryKey: campaignKeys.recipients(id, status),
    initialPageParam: "",
    queryFn: ({ pageParam }) => fetchRecipients(id, status, pageParam),
    getNextPageParam: (last) => last.next_cursor ?? undefined,
    refetchInterval: pollInterval,
  });
  const shown = recipients.data?.pages.flatMap((p) => p.recipients) ?? [];

  const act = async (verb: "pause" | "resume" | "cancel" | "retry-failed") => {
    setError(undefined);
    try {
      await campaignAction(id, verb);
      await client.invalidateQueries({ queryKey: campaignKeys.all });
    } catch (e) {
      setError(errorText(e));
    }
  };

  if (campaign.isPending) return <Spinner />;
  if (campaign.isError) return <FormError error={campaign.error.message} />;
  const c = campaign.data;
  return (
    <div className="page">
      <PageHeader
        title={c.name}
        subtitle={
          <>
            <Badge tone={STATUS_TONE[c.status]}>{c.status}</Badge> {c.template.name} ({c.template.language})
            {c.paused_reason ? ` · paused: ${c.paused_reason.replace(/_/g, " ")}` : ""}
            {c.scheduled_at && c.status === "scheduled" ? ` · starts ${fullTime(c.scheduled_at)}` : ""}
          </>
        }
        actions={
          <>
            {c.status === "running" || c.status === "scheduled" ? (
              <button type="button" className="btn" onClick={() => void act("pause")}>
                Pause
              </button>
            ) : null}
            {c.status === "paused" ? (
              <button type="button" className="btn" onClick={() => void act("resume")}>
                Resume
              </button>
            ) : null}
            {["running", "scheduled", "paused"].includes(c.status) ? (
              <button type="button" className="btn btn-danger" onClick={() => void act("cancel")}>
                Cancel
              </button>
            ) : null}
            {c.counts.failed > 0 && ["running", "paused", "completed"].includes(c.status) ? (
              <button type="button" className="btn" onClick={() => void act("retry-failed")}>
                Retry failed
              </button>
            ) : null}
          </>
        }
      />
      <FormError error={error} />
      <section className="card">
        <Progress counts={c.counts} />
        <dl className="campaign-counts" style={{ display: "flex", flexWrap: "wrap", gap: "1rem" }}>
          {COUNTS.map((k) => (
            <div key={k}>
              <dt className="muted">{k}</dt>
              <dd data-testid={`count-${k}`}>{c.counts[k] ?? 0}</dd>
            </div>
          ))}
        </dl>
      </section>
      <section className="card">
        <div className="card-head">
          <h2>Recipients</h2>
          <select aria-label="Filter by status" value={status} onChange={(e) => setStatus(e.target.value)}>
            <option value="">All</option>
            {RECIPIENT_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
          <a className="btn btn-small" href={recipientsCsvUrl(id, status)}>
            Download CSV
          </a>
        </div>
        {recipients.isPending ? (
          <Spinner />
        ) : (
          <div className="table-wrap">
            <table className="table">
              <thead>
                <tr>
                  <th scope="col">Contact</th>
                  <th scope="col">Phone</th>
                  <th scope="col">Status</th>
                  <th scope="col">Detail</th>
                  <th scope="col">Updated</th>
                </tr>
              </thead>
              <tbody>
                {shown.map((r) => (
                  <tr key={r.contact_id}>
                    <td>{r.name ?? "—"}</td>
                    <td>{r.phone ? `+${r.phone}` : "—"}</td>
                    <td>{r.status}</td>
                    <td>
                      {r.error_code ? `${r.error_code} ${r.error_title ?? ""}` : (r.skipped_reason ?? "")}
                    </td>
                    <td>{fullTime(r.updated_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            <p className="muted" data-testid="recipients-shown">
              {shown.length} shown{recipients.hasNextPage ? "" : " (all)"}
            </p>
            {recipients.hasNextPage ? (
              <button
                type="button"
                className="btn"
                disabled={recipients.isFetchingNextPage}
                onClick={() => void recipients.fetchNextPage()}
              >
                {recipients.isFetchingNextPage ? "Loading…" : "Load more"}
              </button>
            ) : null}
          </div>
        )}
      </section>
    </div>
  );
}
