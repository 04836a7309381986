import { Link } from "wouter";
import { Badge, Empty, FormError, PageHeader, Spinner } from "../../lib/ui";
import { type CampaignCounts, type CampaignStatus, doneCount, useCampaigns } from "./api";

export const STATUS_TONE: Record<CampaignStatus, string> = {
  draft: "neutral",
  scheduled: "neutral",
  running: "ok",
  paused: "warn",
  completed: "ok",
  cancelled: "bad",
};

/** How far a campaign got: recipients past their send out of all of them. */
export function Progress({ counts }: { counts: CampaignCounts }) {
  const done = doneCount(counts);
  const percent = counts.total ? Math.round((done / counts.total) * 100) : 0;
  return (
    <div className="campaign-progress">
      <div
        role="progressbar"
        aria-label="Progress"
        aria-valuemin={0}
        aria-valuemax={counts.total}
        aria-valuenow={done}
        style={{ background: "var(--border, #ddd)", borderRadius: 4, height: 8, minWidth: 120 }}
      >
        <div
          style={{ width: `${percent}%`, height: 8, borderRadius: 4, background: "var(--accent, #1a7f5a)" }}
        />
      </div>
      <span className="muted">
        {done} / {counts.total}
      </span>
    </div>
  );
}

export function CampaignsPage() {
  const campaigns = useCampaigns();
  return (
    <div className="page">
      <PageHeader
        title="Campaigns"
        subtitle="One approved template to many contacts, each exactly once."
        actions={
          <Link href="/campaigns/new" className="btn">
            New campaign
          </Link>
        }
      />
      {campaigns.isPending ? (
        <Spinner />
      ) : campaigns.isError ? (
        <FormError error={campaigns.error.message} />
      ) : !campaigns.data?.length ? (
        <Empty title="No campaigns yet">Create one to send a template to a tagged audience.</Empty>
      ) : (
        <div className="table-wrap">
          <table className="table">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Status</th>
                <th scope="col">Progress</th>
                <th scope="col">Delivered</th>
                <th scope="col">Read</th>
                <th scope="col">Failed</th>
              </tr>
            </thead>
            <tbody>
              {campaigns.data.map((c) => (
                <tr key={c.id}>
                  <td>
                    <Link href={c.status === "draft" ? `/campaigns/new?draft=${c.id}` : `/campaigns/${c.id}`}>
                      {c.name}
                    </Link>
                  </td>
                  <td>
                    <Badge tone={STATUS_TONE[c.status]}>{c.status}</Badge>
                  </td>
                  <td>
                    <Progress counts={c.counts} />
                  </td>
                  <td>{c.counts.delivered}</td>
                  <td>{c.counts.read}</td>
                  <td>{c.counts.failed}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
