import type { TestApp, TestUser } from "../helpers/harness.js";

/** Calls the API as a user; objects go as JSON, strings as the raw body. */
export function call(
  t: TestApp,
  user: TestUser | null,
  method: "GET" | "POST" | "PUT" | "DELETE",
  url: string,
  payload?: unknown,
) {
  return t.app.inject({
    method,
    url,
    headers: { ...(user?.headers ?? {}), "content-type": "application/json" },
    ...(payload === undefined
      ? {}
      : { payload: typeof payload === "string" ? payload : JSON.stringify(payload) }),
  });
}

export async function createFlow(
  t: TestApp,
  user: TestUser,
  body: Record<string, unknown> = { name: "My flow" },
) {
  const response = await call(t, user, "POST", "/api/flows", body);
  if (response.statusCode !== 201) throw new Error(`create failed: ${response.body}`);
  return response.json().flow as { id: string; [field: string]: unknown };
}

export const node = (node_key: string, node_type = "end", config: Record<string, unknown> = {}) => ({
  node_key,
  node_type,
  config,
});

/** The stored state of a flow, straight from the database. */
export async function storedFlow(t: TestApp, flowId: string) {
  const { rows: flows } = await t.database.pool.query("select * from flows where id = $1", [flowId]);
  const { rows: nodes } = await t.database.pool.query(
    "select n->>'node_key' as node_key from flow_graphs g, json_array_elements(g.nodes) n where g.flow_id = $1",
    [flowId],
  );
  return { flow: flows[0], keys: nodes.map((n) => n.node_key as string) };
}
