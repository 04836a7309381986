import { sql } from "drizzle-orm";
import { describe, expect, vi } from "vitest";
import { statusPayload } from "../../src/upstream/sandbox/webhook-payloads.js";
import { sandboxTest as it } from "../helpers/fixtures.js";
import { type Business, customerOf, type SandboxedApp, upstreamCalls } from "../helpers/sandbox-app.js";
import { postWebhook } from "../messaging/webhook/meta.js";
import { addContacts, type Json, ready } from "./helpers.js";

/**
 * Campaign sends go through the send pipeline: after customer-facing sends,
 * with our message id as `biz_opaque_callback_data`, and an unknown outcome
 * resolved as any send's (product.md section 10).
 */

const api = (s: SandboxedApp, b: Business, method: "GET" | "POST" | "PUT", url: string, payload?: unknown) =>
  s.t.app.inject({
    method,
    url,
    headers: { ...b.user.headers, ...(payload === undefined ? {} : { "content-type": "application/json" }) },
    ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
  });

async function startedCampaign(s: SandboxedApp, b: Business): Promise<string> {
  const created = await api(s, b, "POST", "/api/campaigns", {
    name: "Notice",
    template: { name: "plain_notice", language: "en_US" },
    audience: {},
  });
  expect(created.statusCode, created.body).toBe(201);
  const id = created.json().campaign.id as string;
  expect((await api(s, b, "POST", `/api/campaigns/${id}/start`)).statusCode).toBe(200);
  return id;
}

const templateSends = (s: SandboxedApp, b: Business) =>
  upstreamCalls(s, "POST", `${b.phoneNumberId}/messages`)
    .map((r) => r.body as Json)
    .filter((body) => body.type === "template");

async function recipient(s: SandboxedApp, id: string) {
  const { rows } = await s.t.database.db.execute<{
    status: string;
    error_code: string | null;
    message_id: string | null;
  }>(sql`select status, error_code, message_id from campaign_recipients where campaign_id = ${id}`);
  expect(rows).toHaveLength(1);
  return rows[0] as { status: string; error_code: string | null; message_id: string | null };
}

const campaignOf = async (s: SandboxedApp, b: Business, id: string) =>
  (await api(s, b, "GET", `/api/campaigns/${id}`)).json().campaign;

/** The unknown-outcome window (SEND_UNKNOWN_WINDOW_S) ends: every waiting job is due now. */
async function windowEnds(s: SandboxedApp) {
  await s.t.database.pool.query(
    "update graphile_worker._private_jobs set run_at = now() where locked_at is null",
  );
  await s.t.app.deps.jobs.drain();
}

describe("a campaign send whose outcome is unknown", () => {
  it("is recorded sent when Meta's status names its callback data, and never sent again", async ({ s }) => {
    const b = await ready(s);
    const [person] = await addContacts(s.t, b.accountId, 1);
    // Meta takes the send, then the connection drops before its answer.
    s.sandbox.inject({ method: "POST", path: /\/messages$/ }, { dropAfterAccept: true });
    const id = await startedCampaign(s, b);
    await s.t.app.deps.jobs.drain();
    const [sent] = templateSends(s, b);
    const waiting = await recipient(s, id);
    expect(waiting).toMatchObject({ status: "sending" });
    expect(sent?.biz_opaque_callback_data).toBe(waiting.message_id);
    expect(sent?.to).toBe(person?.phone);

    const upstreamId = "wamid.HBgLMTY1MDU1NTEyMzQVAgARGBJDQU1QQUlHTlNUQVRVU0VDSE8A";
    const hook = await postWebhook(
      s.t.app,
      statusPayload({
        phoneNumberId: b.phoneNumberId,
        messageId: upstreamId,
        recipientId: person?.phone as string,
        status: "sent",
        callbackData: waiting.message_id as string,
      }).payload,
    );
    expect(hook.statusCode).toBe(200);
    await s.t.app.deps.jobs.drain();
    expect(await recipient(s, id)).toMatchObject({ status: "sent", error_code: null });
    await windowEnds(s);
    expect(templateSends(s, b)).toHaveLength(1);
    expect(await campaignOf(s, b, id)).toMatchObject({ status: "completed", counts: { sent: 1 } });
    const { rows } = await s.t.database.db.execute<{ message_id: string; status: string }>(
      sql`select message_id, status from messages where id = ${waiting.message_id}`,
    );
    expect(rows[0]).toEqual({ message_id: upstreamId, status: "sent" });
  });

  it("is sent once more after the window when no status names it", async ({ s }) => {
    const b = await ready(s);
    await addContacts(s.t, b.accountId, 1);
    // The connection drops with the request on the wire: nobody can tell whether Meta took it.
    s.sandbox.inject({ method: "POST", path: /\/messages$/ }, { drop: true });
    const id = await startedCampaign(s, b);
    await s.t.app.deps.jobs.drain();
    expect(templateSends(s, b)).toHaveLength(1);
    expect(await recipient(s, id)).toMatchObject({ status: "sending" });
    expect((await campaignOf(s, b, id)).status).toBe("running");

    await windowEnds(s);
    const sends = templateSends(s, b);
    const done = await recipient(s, id);
    expect(sends).toHaveLength(2);
    expect(sends.map((body) => body.biz_opaque_callback_data)).toEqual([done.message_id, done.message_id]);
    expect(done).toMatchObject({ status: "sent", error_code: null });
    await windowEnds(s);
    expect(templateSends(s, b)).toHaveLength(2);
    expect(await campaignOf(s, b, id)).toMatchObject({ status: "completed", counts: { sent: 1 } });
  });

  it("fails with unknown_outcome when the one resend's outcome is unknown too", async ({ s }) => {
    const b = await ready(s);
    await addContacts(s.t, b.accountId, 1);
    s.sandbox.inject({ method: "POST", path: /\/messages$/ }, { drop: true, times: 2 });
    const id = await startedCampaign(s, b);
    await s.t.app.deps.jobs.drain();
    await windowEnds(s);
    expect(templateSends(s, b)).toHaveLength(2);
    expect(await recipient(s, id)).toMatchObject({ status: "sending" });
    await windowEnds(s);
    expect(templateSends(s, b)).toHaveLength(2);
    expect(await recipient(s, id)).toMatchObject({ status: "failed", error_code: "unknown_outcome" });
    // The campaign's look after that failure may be due a moment later (its sends were claimed
    // lately): the clock is moved on until it has run, as a real one would move.
    await vi.waitFor(
      async () => {
        await windowEnds(s);
        expect(await campaignOf(s, b, id)).toMatchObject({ status: "completed", counts: { failed: 1 } });
      },
      { timeout: 10_000, interval: 100 },
    );
    expect(templateSends(s, b)).toHaveLength(2);
    const failed = (await api(s, b, "GET", `/api/campaigns/${id}/recipients?status=failed`)).json();
    expect(failed.recipients[0]).toMatchObject({
      error_code: "unknown_outcome",
      error_title: expect.stringMatching(/not sent a third time/),
    });
  });
});

describe("customer-facing sends first", () => {
  it("a bot reply goes out ahead of a running campaign's queued sends, at the number's rate", async ({
    s,
  }) => {
    const b = await ready(s);
    const rate = 5;
    await s.t.database.pool.query(
      "update messaging_configs set messages_per_second = $1 where account_id = $2",
      [rate, b.accountId],
    );
    const flow = await api(s, b, "POST", "/api/flows", {
      name: "Hours",
      trigger_type: "keyword",
      trigger_config: { keywords: ["hours"], match_type: "exact" },
    });
    expect(flow.statusCode, flow.body).toBe(201);
    const flowId = flow.json().flow.id as string;
    const put = await api(s, b, "PUT", `/api/flows/${flowId}`, {
      entry_node_id: "start",
      nodes: [
        { node_key: "start", node_type: "start", config: { next_node_key: "say" } },
        {
          node_key: "say",
          node_type: "send_message",
          config: { text: "We open at 9", next_node_key: "end" },
        },
        { node_key: "end", node_type: "end", config: {} },
      ],
    });
    expect(put.statusCode, put.body).toBe(200);
    const activated = await api(s, b, "POST", `/api/flows/${flowId}/activate`, { status: "active" });
    expect(activated.statusCode, activated.body).toBe(200);

    await addContacts(s.t, b.accountId, 20);
    const id = await startedCampaign(s, b);
    const outbound = () =>
      upstreamCalls(s, "POST", `${b.phoneNumberId}/messages`).filter(
        (r) => (r.body as Json).status !== "read",
      );
    // The campaign is under way, most of it still to send.
    const started = Date.now();
    while (templateSends(s, b).length < 3) {
      if (Date.now() - started > 10_000) throw new Error("the campaign did not start sending");
      await new Promise((r) => setTimeout(r, 20));
    }
    const before = outbound().length;
    const customer = customerOf(s, b);
    // customerOf waits for the jobs it causes: the campaign's too.
    await customer.text("hours");
    const all = outbound();
    const reply = all.findIndex((r) => (r.body as Json).to === customer.waId);
    expect(reply).toBeGreaterThanOrEqual(0);
    expect((all[reply]?.body as Json)?.text).toEqual({ body: "We open at 9" });
    // The reply took one of the number's next slots (the slot already reserved may go first); the
    // campaign's sends claimed before it were still waiting, and went after it.
    expect(reply).toBeLessThanOrEqual(before + 2);
    const campaignAfter = all.slice(reply + 1).filter((r) => (r.body as Json).type === "template");
    expect(campaignAfter.length).toBeGreaterThanOrEqual(10);
    expect(await campaignOf(s, b, id)).toMatchObject({ status: "completed", counts: { sent: 20 } });
    // And at the number's rate throughout, the reply included.
    const times = all.map((r) => r.at.getTime()).sort((x, y) => x - y);
    for (let i = 0; i + rate < times.length; i++) {
      expect((times[i + rate] as number) - (times[i] as number)).toBeGreaterThanOrEqual(1000);
    }
  }, 60_000);
});

describe("a campaign send job that fails every attempt before its claim", () => {
  /** The send jobs' next attempts are due now (graphile-worker backs them off for seconds). */
  async function retriesDue(s: SandboxedApp) {
    for (let i = 0; i < 4; i++) await windowEnds(s);
  }

  it("fails the recipient send_failed (the campaign completes), and retry-failed sends it once", async ({
    s,
  }) => {
    const b = await ready(s);
    const [person] = await addContacts(s.t, b.accountId, 1);
    const sends = s.t.app.deps.sends;
    const admit = sends.admit.bind(sends);
    // Every attempt of the campaign's send job fails before it claims the message.
    sends.admit = (priority) =>
      priority === "campaign" ? Promise.reject(new Error("the database went away")) : admit(priority);
    let id: string;
    try {
      id = await startedCampaign(s, b);
      await s.t.app.deps.jobs.drain();
      await retriesDue(s);
    } finally {
      sends.admit = admit;
    }
    expect(templateSends(s, b)).toHaveLength(0);
    const failed = await recipient(s, id);
    expect(failed).toMatchObject({ status: "failed", error_code: "send_failed" });
    const { rows } = await s.t.database.db.execute<{ status: string }>(
      sql`select status from messages where id = ${failed.message_id}`,
    );
    expect(rows[0]?.status).toBe("failed");
    expect(await campaignOf(s, b, id)).toMatchObject({
      status: "completed",
      counts: { total: 1, failed: 1, sent: 0 },
    });

    const retried = await api(s, b, "POST", `/api/campaigns/${id}/retry-failed`);
    expect(retried.statusCode, retried.body).toBe(200);
    await s.t.app.deps.jobs.drain();
    expect(templateSends(s, b).map((body) => body.to)).toEqual([person?.phone]);
    expect(await recipient(s, id)).toMatchObject({ status: "sent", error_code: null });
    expect(await campaignOf(s, b, id)).toMatchObject({ status: "completed", counts: { sent: 1, failed: 0 } });
  }, 30_000);

  it("is failed by the campaign when failing the message failed too (its jobs exhausted, nothing left)", async ({
    s,
  }) => {
    const b = await ready(s);
    await addContacts(s.t, b.accountId, 2);
    const sends = s.t.app.deps.sends;
    const admit = sends.admit.bind(sends);
    sends.admit = (priority) =>
      priority === "campaign" ? Promise.reject(new Error("the database went away")) : admit(priority);
    let id: string;
    try {
      id = await startedCampaign(s, b);
      await s.t.app.deps.jobs.drain();
      // Their jobs used up their attempts with nobody recording it (the last attempt's own record failed).
      await s.t.database.pool.query(
        `update graphile_worker._private_jobs j set attempts = max_attempts
           from graphile_worker._private_tasks t where t.id = j.task_id and t.identifier = 'send-message'`,
      );
    } finally {
      sends.admit = admit;
    }
    const { rows: stuck } = await s.t.database.db.execute<{ status: string }>(
      sql`select status from campaign_recipients where campaign_id = ${id}`,
    );
    expect(stuck.map((r) => r.status)).toEqual(["sending", "sending"]);
    // Claimed a while ago: the campaign's next look finds nothing that could still send them.
    await s.t.database.pool.query(
      "update campaign_recipients set claimed_at = now() - interval '5 minutes' where campaign_id = $1",
      [id],
    );
    await windowEnds(s);
    await windowEnds(s);
    expect(templateSends(s, b)).toHaveLength(0);
    expect(await campaignOf(s, b, id)).toMatchObject({
      status: "completed",
      counts: { total: 2, failed: 2 },
    });
    const failed = (await api(s, b, "GET", `/api/campaigns/${id}/recipients?status=failed`)).json();
    expect(failed.recipients.map((r: Json) => r.error_code)).toEqual(["send_failed", "send_failed"]);
  }, 30_000);
});

describe("sends claimed but not yet on the wire", () => {
  /** A campaign of `count` at 5 a second: every recipient is claimed at once (the claim is 25 at least). */
  async function slowCampaign(s: SandboxedApp, b: Business, count: number) {
    await s.t.database.pool.query(
      "update messaging_configs set messages_per_second = 5 where account_id = $1",
      [b.accountId],
    );
    const people = await addContacts(s.t, b.accountId, count);
    const id = await startedCampaign(s, b);
    const started = Date.now();
    while (templateSends(s, b).length < 2) {
      if (Date.now() - started > 15_000) throw new Error("the campaign did not start sending");
      await new Promise((r) => setTimeout(r, 20));
    }
    const { rows } = await s.t.database.db.execute<{ n: number }>(
      sql`select count(*)::int as n from campaign_recipients where campaign_id = ${id} and status = 'queued'`,
    );
    // Nothing is left to claim: what stops now is stopped between the claim and the wire.
    expect(rows[0]?.n).toBe(0);
    return { id, people };
  }

  it("are not sent once the campaign is cancelled: those recipients are skipped (cancelled)", async ({
    s,
  }) => {
    const b = await ready(s);
    const { id } = await slowCampaign(s, b, 20);
    const cancelled = await api(s, b, "POST", `/api/campaigns/${id}/cancel`);
    expect(cancelled.statusCode, cancelled.body).toBe(200);
    const atCancel = templateSends(s, b).length;
    await s.t.app.deps.jobs.drain();
    const sent = templateSends(s, b);
    // At most the send already on its way (one slot at 5 a second), not the rest of those claimed.
    expect(sent.length).toBeLessThanOrEqual(atCancel + 1);
    expect(sent.length).toBeLessThan(12);
    const campaign = await campaignOf(s, b, id);
    expect(campaign.status).toBe("cancelled");
    expect(campaign.counts).toMatchObject({ total: 20, sent: sent.length, skipped: 20 - sent.length });
    const skipped = (await api(s, b, "GET", `/api/campaigns/${id}/recipients?status=skipped`)).json();
    expect(skipped.recipients).toHaveLength(20 - sent.length);
    for (const r of skipped.recipients)
      expect(r).toMatchObject({ skipped_reason: "cancelled", message_id: null });
    // Their unsent messages are gone from the conversations; the sent ones stay.
    const { rows } = await s.t.database.db.execute<{ n: number }>(
      sql`select count(*)::int as n from messages where campaign_id = ${id}`,
    );
    expect(rows[0]?.n).toBe(sent.length);
  }, 60_000);

  it("wait while the campaign is paused, and each goes exactly once after resume", async ({ s }) => {
    const b = await ready(s);
    const { id, people } = await slowCampaign(s, b, 12);
    const paused = await api(s, b, "POST", `/api/campaigns/${id}/pause`);
    expect(paused.statusCode, paused.body).toBe(200);
    await s.t.app.deps.jobs.drain();
    const whilePaused = templateSends(s, b).length;
    expect(whilePaused).toBeLessThan(12);
    await new Promise((r) => setTimeout(r, 500));
    expect(templateSends(s, b)).toHaveLength(whilePaused);
    const counts = (await campaignOf(s, b, id)).counts;
    expect(counts).toMatchObject({ sent: whilePaused, queued: 12 - whilePaused });

    const resumed = await api(s, b, "POST", `/api/campaigns/${id}/resume`);
    expect(resumed.statusCode, resumed.body).toBe(200);
    const started = Date.now();
    while ((await campaignOf(s, b, id)).status !== "completed") {
      if (Date.now() - started > 30_000) throw new Error("the resumed campaign did not complete");
      await s.t.app.deps.jobs.drain();
    }
    const to = templateSends(s, b).map((body) => body.to as string);
    expect(to.sort()).toEqual(people.map((p) => p.phone).sort());
    expect(await campaignOf(s, b, id)).toMatchObject({ counts: { sent: 12, skipped: 0 } });
  }, 60_000);
});

describe("a template Meta paused since the campaign started", () => {
  it("pauses the campaign with paused_reason on Meta's 132015; the refused recipient waits queued and goes after resume", async ({
    s,
  }) => {
    const b = await ready(s);
    const people = await addContacts(s.t, b.accountId, 3);
    s.sandbox.inject(
      { method: "POST", path: /\/messages$/ },
      { status: 400, error: { code: 132015, message: "Template is paused" } },
    );
    const id = await startedCampaign(s, b);
    await s.t.app.deps.jobs.drain();
    const paused = await campaignOf(s, b, id);
    expect(paused).toMatchObject({ status: "paused", paused_reason: "template_paused" });
    const refusedAndSent = templateSends(s, b).length;
    // The refused one (Meta never took it) and any withdrawn before their call wait queued.
    expect(paused.counts.queued).toBeGreaterThanOrEqual(1);
    expect(paused.counts.sent + paused.counts.queued).toBe(3);
    expect(paused.counts.sent).toBe(refusedAndSent - 1);
    const { rows } = await s.t.database.db.execute<{ n: number }>(
      sql`select count(*)::int as n from messages where campaign_id = ${id}`,
    );
    expect(rows[0]?.n).toBe(paused.counts.sent);

    const resumed = await api(s, b, "POST", `/api/campaigns/${id}/resume`);
    expect(resumed.statusCode, resumed.body).toBe(200);
    expect(resumed.json().campaign.paused_reason).toBeNull();
    await s.t.app.deps.jobs.drain();
    expect(await campaignOf(s, b, id)).toMatchObject({ status: "completed", counts: { sent: 3 } });
    const to = templateSends(s, b).map((body) => body.to as string);
    // Each recipient has the template once, plus the one send Meta refused.
    expect(to).toHaveLength(4);
    expect(new Set(to)).toEqual(new Set(people.map((p) => p.phone)));
  }, 30_000);
});
