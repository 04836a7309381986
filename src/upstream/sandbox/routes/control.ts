/**
 * The control surface outside the Graph API (`/_sandbox` and below; main.ts answers it):
 * not logged, not delayed, never faulted.
 */
import type { FastifyInstance } from "fastify";
import { unsupported } from "../graph-error.js";
import { pathOf, queryOf, sendJson } from "./answer.js";

export interface ExtraRouteResult {
  status: number;
  body: unknown;
}

export type ExtraRoutes = (request: {
  method: string;
  path: string;
  query: Record<string, string>;
  body: unknown;
}) => Promise<ExtraRouteResult | undefined>;

/** Route config that marks a control route (server.ts neither logs nor delays it). */
export const CONTROL = { control: true };

export function controlRoutes(app: FastifyInstance, extraRoutes: ExtraRoutes) {
  for (const url of ["/_sandbox", "/_sandbox/*"]) {
    app.all(url, { config: CONTROL, exposeHeadRoute: false }, async (request, reply) => {
      const path = pathOf(request);
      const found = await extraRoutes({
        method: request.method,
        path,
        query: queryOf(request),
        body: request.body,
      });
      if (!found) throw unsupported(request.method, path);
      return sendJson(reply, found.status, found.body);
    });
  }
}
