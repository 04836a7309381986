import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { Link, useLocation } from "wouter";
import { shortTime } from "../../lib/format";
import { pollInterval } from "../../lib/live";
import { Badge, Empty, FormError, PageHeader, Spinner } from "../../lib/ui";
import { createFlow, fetchFlows, fetchFlowTemplates, flowKeys } from "./api";

const TRIGGERS: Record<string, string> = {
  keyword: "Keyword",
  first_inbound_message: "First message",
  manual: "Manual",
};

export function FlowsPage() {
  const client = useQueryClient();
  const [, navigate] = useLocation();
  const [creating, setCreating] = useState(false);
  const flows = useQuery({
    queryKey: flowKeys.all,
    queryFn: fetchFlows,
    refetchInterval: pollInterval,
  });
  const templates = useQuery({
    queryKey: flowKeys.templates,
    queryFn: fetchFlowTemplates,
    staleTime: Number.POSITIVE_INFINITY,
  });
  const create = useMutation({
    mutationFn: createFlow,
    onSuccess: ({ flow }) => {
      void client.invalidateQueries({ queryKey: flowKeys.all });
      navigate(`/flows/${flow.id}`);
    },
  });

  // Servers that count executions say so in every flow.
  const counted = flows.data?.some((f) => typeof f.execution_count === "number") ?? false;
  return (
    <div className="page">
      <PageHeader
        title="Flows"
        subtitle="Chatbots that answer customers before an agent steps in."
        actions={
          <button
            type="button"
            className="btn btn-primary"
            onClick={() => setCreating((c) => !c)}
            aria-expanded={creating}
          >
            New flow
          </button>
        }
      />
      {creating ? (
        <section className="card" aria-labelledby="new-flow-title">
          <h2 id="new-flow-title">Start from</h2>
          <div className="template-grid">
            <button
              type="button"
              className="template-card"
              onClick={() => create.mutate({ name: "Untitled flow", trigger_type: "keyword" })}
            >
              <strong>Blank flow</strong>
              <span>An empty canvas with a start node.</span>
            </button>
            {templates.data?.map((t) => (
              <button
                key={t.slug}
                type="button"
                className="template-card"
                onClick={() => create.mutate({ template_slug: t.slug })}
                aria-label={`Use template ${t.name}`}
              >
                <strong>{t.name}</strong>
                <span>{t.description}</span>
              </button>
            ))}
          </div>
          <FormError error={create.error?.message} />
        </section>
      ) : null}
      {flows.isPending ? (
        <Spinner />
      ) : !flows.data?.length ? (
        <Empty title="No flows yet">
          Create one from a template to greet customers, answer FAQs or capture leads.
        </Empty>
      ) : (
        <div className="table-wrap">
          <table className="table">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Status</th>
                <th scope="col">Trigger</th>
                {counted ? <th scope="col">Runs</th> : null}
                <th scope="col">Updated</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {flows.data.map((f) => (
                <tr key={f.id}>
                  <td>
                    <Link href={`/flows/${f.id}`} className="strong-link">
                      {f.name}
                    </Link>
                  </td>
                  <td>
                    <Badge
                      tone={f.status === "active" ? "ok" : f.status === "archived" ? "muted" : "neutral"}
                    >
                      {f.status}
                    </Badge>
                  </td>
                  <td>
                    {TRIGGERS[f.trigger_type] ?? f.trigger_type}
                    {f.trigger_type === "keyword" && Array.isArray(f.trigger_config.keywords) ? (
                      <span className="muted"> · {(f.trigger_config.keywords as string[]).join(", ")}</span>
                    ) : null}
                  </td>
                  {counted ? <td data-label="Runs">{f.execution_count ?? 0}</td> : null}
                  <td data-label="Updated">{shortTime(f.updated_at)}</td>
                  <td className="row-actions">
                    <Link href={`/flows/${f.id}/runs`} aria-label={`Runs of ${f.name}`}>
                      Runs
                    </Link>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
