/** A business account's edges: `GET /{waba_id}/message_templates` (cursor-paged) and `POST /{waba_id}/subscribed_apps`. */
import type { FastifyInstance } from "fastify";
import { invalidParameter } from "../graph-error.js";
import type { SandboxState } from "../state.js";
import type { SandboxTemplate } from "../templates.js";
import { graphRoute } from "./answer.js";

export function businessAccountRoutes(app: FastifyInstance, state: SandboxState) {
  graphRoute(app, state, "GET", "message_templates", ({ objectId, token, method, version, query }) => {
    state.checkWaba(objectId, token, method);
    return templatePage(state, objectId, version, query);
  });
  graphRoute(app, state, "POST", "subscribed_apps", ({ objectId, token, method }) => {
    state.checkWaba(objectId, token, method);
    return { success: true };
  });
}

/** One page of templates with Meta's cursor paging (`paging.next` only when there is more). */
function templatePage(state: SandboxState, wabaId: string, version: string, query: Record<string, string>) {
  const all = state.templatesOf(wabaId);
  const limit = Math.min(Math.max(Number(query.limit) || 25, 1), 1000);
  const start = query.after ? Number.parseInt(Buffer.from(query.after, "base64url").toString(), 10) : 0;
  if (!Number.isInteger(start) || start < 0 || start > all.length) {
    throw invalidParameter("after is not a valid cursor");
  }
  const fields = (query.fields ?? "id,name,language,status,category,components").split(",");
  const data = all.slice(start, start + limit).map((t) => {
    const answer: Record<string, unknown> = {};
    for (const field of fields) {
      const key = field.trim() as keyof SandboxTemplate;
      if (key in t) answer[key] = t[key];
    }
    answer.id = t.id;
    return answer;
  });
  const cursor = (n: number) => Buffer.from(String(n)).toString("base64url");
  const paging: Record<string, unknown> = {
    cursors: { before: cursor(start), after: cursor(start + data.length) },
  };
  if (start + data.length < all.length) {
    const next = new URLSearchParams({ ...query, limit: String(limit), after: cursor(start + data.length) });
    paging.next = `${state.url}/${version}/${wabaId}/message_templates?${next}`;
  }
  return { data, paging };
}
