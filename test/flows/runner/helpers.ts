import { randomBytes } from "node:crypto";
import { eq } from "drizzle-orm";
import { expect, vi } from "vitest";
import { flowRuns } from "../../../src/db/schema/index.js";
import { type Sandbox, type SandboxOptions, startSandbox } from "../../../src/upstream/sandbox/server.js";
import {
  buttonReplyPayload,
  inboundTextPayload,
  listReplyPayload,
  signPayload,
} from "../../../src/upstream/sandbox/webhook-payloads.js";
import { insertChannelConfig, uniqueDigits } from "../../helpers/fixtures.js";
import { createTestApp, signUpWithAccount, type TestApp, type TestUser } from "../../helpers/harness.js";
import { serviceEnv as serviceEnvFor } from "../../helpers/service.js";

/** JSON read back from the API or the sandbox, accessed loosely in assertions. */
// biome-ignore lint/suspicious/noExplicitAny: test access into parsed JSON
export type Json = any;

export const APP_SECRET = "runner-test-app-secret";

export interface World {
  t: TestApp;
  sandbox: Sandbox;
  owner: TestUser;
  accountId: string;
  phoneNumberId: string;
  accessToken: string;
  verifyToken: string;
  /** The app's clock. */
  now: () => Date;
  close(): Promise<void>;
}

/** The app wired to a sandbox upstream, with one account whose channel is connected. */
export async function createWorld(
  options: { now?: () => Date; workers?: boolean; captureLogs?: boolean; sandbox?: SandboxOptions } = {},
): Promise<World> {
  const sandbox = await startSandbox(options.sandbox);
  const t = await createTestApp({
    config: { appSecret: APP_SECRET, graphApiUrl: sandbox.url },
    upstreamTimeoutMs: 3000,
    now: options.now,
    workers: options.workers,
    captureLogs: options.captureLogs,
  });
  const { user: owner, accountId } = await signUpWithAccount(t.app);
  const phoneNumberId = uniqueDigits(15);
  const { accessToken, verifyToken } = await insertChannelConfig(t, {
    accountId,
    userId: owner.id,
    phoneNumberId,
  });
  sandbox.addNumber({ phoneNumberId, accessToken });
  return {
    t,
    sandbox,
    owner,
    accountId,
    phoneNumberId,
    accessToken,
    verifyToken: String(verifyToken),
    now: options.now ?? (() => new Date()),
    async close() {
      await t.close();
      await sandbox.close();
    },
  };
}

/** What a real service (test/helpers/service.ts) needs to work on this world's database and sandbox. */
export const serviceEnv = (w: World) => serviceEnvFor(w.t, w.sandbox.url, APP_SECRET);

/** Posts a webhook body signed like Meta signs it. */
export async function postWebhook(w: World, payload: object) {
  const raw = JSON.stringify(payload);
  const response = await w.t.app.inject({
    method: "POST",
    url: "/api/messaging/webhook",
    headers: { "content-type": "application/json", "x-hub-signature-256": signPayload(raw, APP_SECRET) },
    payload: raw,
  });
  expect(response.statusCode).toBe(200);
}

/** A simulated WhatsApp customer of the world's number. Each call waits until the runner is done. */
export function customer(w: World, name = "Ada") {
  const from = uniqueDigits(11);
  // A person reads the bot's question before answering: Meta stamps their message (whole
  // seconds) at least a second after it went out, on the app's clock.
  const sender = () => ({
    phoneNumberId: w.phoneNumberId,
    from,
    name,
    timestamp: Math.floor(w.now().getTime() / 1000) + 1,
  });
  const deliver = async (built: { payload: object; messageId: string }) => {
    await postWebhook(w, built.payload);
    await w.t.app.deps.jobs.drain();
    return built;
  };
  return {
    waId: from,
    /** The webhook body of a text, not yet posted (for duplicate and concurrent deliveries). */
    textPayload: (text: string) => inboundTextPayload({ ...sender(), text }),
    text: (text: string) => deliver(inboundTextPayload({ ...sender(), text })),
    button: (replyId: string, title = replyId) =>
      deliver(buttonReplyPayload({ ...sender(), replyId, title })),
    list: (replyId: string, title = replyId) => deliver(listReplyPayload({ ...sender(), replyId, title })),
  };
}

export type Customer = ReturnType<typeof customer>;

/** What the service sent to the sandbox: the bodies of `POST /{phone_number_id}/messages`. */
export function sentMessages(w: World, to?: string) {
  return (
    w.sandbox
      .requests()
      .filter((r) => r.method === "POST" && r.path.endsWith("/messages"))
      .map((r) => r.body as Record<string, Json>)
      // Read receipts go to the same path; they are not messages.
      .filter((body) => body.status !== "read")
      .filter((body) => to === undefined || body.to === to)
  );
}

async function api(w: World, method: "GET" | "POST" | "PUT" | "DELETE", url: string, payload?: unknown) {
  return w.t.app.inject({
    method,
    url,
    headers: w.owner.headers,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
}

/** Clones a template and activates it; returns the flow id. */
export async function activeTemplate(w: World, slug: string, patch?: Record<string, unknown>) {
  const created = await api(w, "POST", "/api/flows", { template_slug: slug });
  expect(created.statusCode).toBe(201);
  const id = created.json().flow.id as string;
  if (patch) expect((await api(w, "PUT", `/api/flows/${id}`, patch)).statusCode).toBe(200);
  await activate(w, id);
  return id;
}

export async function activate(w: World, flowId: string) {
  const response = await api(w, "POST", `/api/flows/${flowId}/activate`, { status: "active" });
  expect(response.statusCode, response.body).toBe(200);
}

export interface NodeSpec {
  node_key: string;
  node_type: string;
  config: Record<string, unknown>;
}

/** start, then a collect_input asking for an order number (a number), then end: a run that waits for its customer. */
export const ORDER_QUESTION: NodeSpec[] = [
  { node_key: "start", node_type: "start", config: { next_node_key: "ask" } },
  {
    node_key: "ask",
    node_type: "collect_input",
    config: {
      prompt_text: "Your order number?",
      var_key: "order",
      validation: "number",
      next_node_key: "bye",
    },
  },
  { node_key: "bye", node_type: "end", config: {} },
];

/** A flow written node by node, activated. */
export async function activeFlow(
  w: World,
  input: {
    trigger_type?: string;
    trigger_config?: Record<string, unknown>;
    fallback_policy?: Record<string, unknown>;
    nodes: NodeSpec[];
    entry?: string;
  },
) {
  const created = await api(w, "POST", "/api/flows", {
    name: `Flow ${randomBytes(3).toString("hex")}`,
    trigger_type: input.trigger_type ?? "keyword",
    trigger_config: input.trigger_config ?? {},
  });
  expect(created.statusCode).toBe(201);
  const id = created.json().flow.id as string;
  const put = await api(w, "PUT", `/api/flows/${id}`, {
    entry_node_id: input.entry ?? input.nodes[0]?.node_key,
    nodes: input.nodes,
    ...(input.fallback_policy ? { fallback_policy: input.fallback_policy } : {}),
  });
  expect(put.statusCode, put.body).toBe(200);
  await activate(w, id);
  return id;
}

export async function putFlow(w: World, flowId: string, body: Record<string, unknown>) {
  const response = await api(w, "PUT", `/api/flows/${flowId}`, body);
  expect(response.statusCode, response.body).toBe(200);
  return response.json();
}

export async function deleteFlow(w: World, flowId: string) {
  const response = await api(w, "DELETE", `/api/flows/${flowId}`);
  expect(response.statusCode).toBe(200);
}

/** The flow's `execution_count` as GET /api/flows/{id} answers it. */
export async function executionCount(w: World, flowId: string): Promise<number> {
  return (await api(w, "GET", `/api/flows/${flowId}`)).json().flow.execution_count as number;
}

export async function getFlowNodes(w: World, flowId: string) {
  return (await api(w, "GET", `/api/flows/${flowId}`)).json().nodes as NodeSpec[];
}

export interface RunJson {
  id: string;
  flow_id: string;
  contact_id: string;
  conversation_id: string;
  status: string;
  current_node_key: string | null;
  vars: Record<string, unknown>;
  reprompt_count: number;
  end_reason: string | null;
}

export interface RunEventJson {
  event_type: string;
  node_key: string | null;
  payload: Record<string, Json>;
}

/** The flow's runs through the API, newest first. */
export async function runsOf(w: World, flowId: string): Promise<RunJson[]> {
  const response = await api(w, "GET", `/api/flows/${flowId}/runs?limit=200`);
  expect(response.statusCode).toBe(200);
  return response.json().runs;
}

/** The only run of the flow for the customer, with its events. */
export async function runFor(w: World, flowId: string, who: Customer) {
  const conversationId = (await conversationOf(w, who)).id;
  const runs = (await runsOf(w, flowId)).filter((r) => r.conversation_id === conversationId);
  expect(runs).toHaveLength(1);
  const response = await api(w, "GET", `/api/flows/${flowId}/runs/${runs[0]!.id}`);
  expect(response.statusCode).toBe(200);
  return response.json() as { run: RunJson; events: RunEventJson[] };
}

/**
 * Waits until the bot's one message to the customer (a question) went out and Meta's answer to it
 * was recorded: the run then waits for the customer's answer.
 */
export async function questionRecorded(w: World, who: Customer) {
  await vi.waitFor(
    async () => {
      const outbound = (await conversationOf(w, who)).messages.filter((m) => m.direction === "outbound");
      expect(outbound.map((m) => m.status)).toEqual(["sent"]);
    },
    { timeout: 5000 },
  );
}

/** The customer's conversation as the inbox shows it, with its messages. */
export async function conversationOf(w: World, who: Customer) {
  const list = await api(w, "GET", "/api/conversations?limit=200");
  const conversation = (list.json().conversations as Array<Record<string, Json>>).find(
    (c) => c.contact.wa_id === who.waId,
  );
  expect(conversation).toBeDefined();
  const messages = await api(w, "GET", `/api/conversations/${conversation!.id}/messages?limit=200`);
  return {
    id: conversation!.id as string,
    status: conversation!.status as string,
    assigned_to: conversation!.assigned_to as string | null,
    contactId: conversation!.contact.id as string,
    messages: messages.json().messages as Array<Record<string, Json>>,
  };
}

/** Active runs of the contact straight from the table (what the unique index guards). */
export async function activeRunCount(w: World, contactId: string) {
  const rows = await w.t.database.db.select().from(flowRuns).where(eq(flowRuns.contactId, contactId));
  return rows.filter((r) => r.status === "active").length;
}

export { api };
