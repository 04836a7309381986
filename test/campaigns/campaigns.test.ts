import { sql } from "drizzle-orm";
import { describe, expect } from "vitest";
import { templateStatusPayload } from "../../src/upstream/sandbox/webhook-payloads.js";
import { sandboxTest as it } from "../helpers/fixtures.js";
import { addMember } from "../helpers/harness.js";
import {
  type Business,
  customerOf,
  messagesOf,
  type SandboxedApp,
  upstreamCalls,
} from "../helpers/sandbox-app.js";
import { postWebhook } from "../messaging/webhook/meta.js";
import { addContacts, type Json, ready } from "./helpers.js";

type Method = "GET" | "POST" | "PATCH" | "DELETE";
const api = (
  s: SandboxedApp,
  headers: Record<string, string> | null,
  method: Method,
  url: string,
  payload?: unknown,
) =>
  s.t.app.inject({
    method,
    url,
    headers: { ...(headers ?? {}), ...(payload === undefined ? {} : { "content-type": "application/json" }) },
    ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
  });

const restock = (overrides: Record<string, unknown> = {}) => ({
  name: "Restock",
  template: { name: "restock", language: "en_US" },
  parameters: { body: ["{{contact.name|there}}", "{{contact.attributes.product|item}}"] },
  audience: {},
  ...overrides,
});

/** A `scheduled_at` an hour ahead: started, such a campaign takes its snapshot and sends nothing yet. */
const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString();

const create = async (s: SandboxedApp, b: Business, body: unknown) =>
  api(s, b.user.headers, "POST", "/api/campaigns", body);
async function created(s: SandboxedApp, b: Business, body: unknown = restock()): Promise<Json> {
  const response = await create(s, b, body);
  expect(response.statusCode, response.body).toBe(201);
  return response.json().campaign;
}
const get = async (s: SandboxedApp, b: Business, id: string): Promise<Json> =>
  (await api(s, b.user.headers, "GET", `/api/campaigns/${id}`)).json().campaign;
const sends = (s: SandboxedApp) =>
  upstreamCalls(s, "POST", /\/messages$/).filter((r) => (r.body as Json).type === "template");
const rowsOf = async (s: SandboxedApp, table: "campaigns" | "campaign_recipients", accountId: string) => {
  const { rows } = await s.t.database.db.execute<{ n: number }>(
    table === "campaigns"
      ? sql`select count(*)::int as n from campaigns where account_id = ${accountId}`
      : sql`select count(*)::int as n from campaign_recipients r join campaigns c on c.id = r.campaign_id
             where c.account_id = ${accountId}`,
  );
  return rows[0]?.n;
};

describe("creating a campaign", () => {
  it("stores a draft with its template, parameters, audience and zero counts", async ({ s }) => {
    const b = await ready(s);
    const campaign = await created(s, b, restock({ audience: { tags_any: ["vip"] } }));
    expect(campaign).toMatchObject({
      name: "Restock",
      status: "draft",
      template: { name: "restock", language: "en_US" },
      parameters: { body: ["{{contact.name|there}}", "{{contact.attributes.product|item}}"] },
      audience: { tags_any: ["vip"] },
      scheduled_at: null,
      started_at: null,
      counts: {
        total: 0,
        queued: 0,
        sent: 0,
        delivered: 0,
        read: 0,
        replied: 0,
        failed: 0,
        skipped: 0,
        deferred: 0,
      },
    });
    expect(await get(s, b, campaign.id)).toEqual(campaign);
    const list = (await api(s, b.user.headers, "GET", "/api/campaigns")).json();
    expect(list.campaigns.map((c: Json) => c.id)).toEqual([campaign.id]);
  });

  it.for([
    [{ template: { name: "nope", language: "en_US" } }, /not among the synced templates/],
    [{ template: { name: "draft_offer", language: "en_US" }, parameters: {} }, /PENDING, not APPROVED/],
    [{ parameters: { body: ["{{contact.name}}"] } }, /parameters.body: .*expects 2 values, got 1/],
    [{ parameters: {} }, /parameters.body: .*2 placeholders/],
    [
      { parameters: { body: ["a", "b"], header: ["x"] } },
      /parameters.header: the template's header has no placeholders/,
    ],
    [{ parameters: { body: ["{{contact.email}}", "b"] } }, /unknown field \{\{contact.email\}\}/],
    [{ parameters: { body: ["a", " "] } }, /value for \{\{2\}\} is empty/],
    [{ scheduled_at: "2020-01-01T00:00:00Z" }, /scheduled_at: must be in the future/],
    [{ scheduled_at: "tomorrow" }, /scheduled_at/],
    [
      { audience: { contact_ids: ["0b4f5d1e-2c3a-4b5c-8d9e-0f1a2b3c4d5e"] } },
      /audience.contact_ids: no contact/,
    ],
    [{ audience: { tags_any: "vip" } }, /audience.tags_any/],
    [{ audience: { city: "Lisbon" } }, /audience/],
    [{ name: "" }, /name/],
  ] as [Record<string, unknown>, RegExp][])(
    "answers 400 naming what is wrong (%j) and stores nothing",
    async ([change, message], { s }) => {
      const b = await ready(s);
      const response = await create(s, b, restock(change));
      expect(response.statusCode).toBe(400);
      expect(response.json().error).toMatch(message);
      expect(await rowsOf(s, "campaigns", b.accountId)).toBe(0);
    },
  );

  it("fills named placeholders by name, a media header with a link and URL button parameters", async ({
    s,
  }) => {
    const b = await ready(s);
    await created(s, b, {
      name: "Named",
      template: { name: "named_offer", language: "en_US" },
      parameters: {
        body: { first_name: "{{contact.name|friend}}", city: "{{contact.attributes.city|your}}" },
      },
      audience: {},
    });
    const wrong = await create(s, b, {
      name: "Named",
      template: { name: "named_offer", language: "en_US" },
      parameters: { body: { first_name: "x", town: "y" } },
      audience: {},
    });
    expect(wrong.statusCode).toBe(400);
    expect(wrong.json().error).toMatch(/no value for \{\{city\}\}/);
    const photo = {
      name: "Photo",
      template: { name: "photo_offer", language: "en_US" },
      parameters: {
        header: ["https://cdn.test/new.jpg"],
        buttons: [{ index: 0, parameters: ["{{contact.phone}}"] }],
      },
      audience: {},
    };
    await created(s, b, photo);
    const noLink = await create(s, b, {
      ...photo,
      parameters: { ...photo.parameters, header: ["a picture"] },
    });
    expect(noLink.json().error).toMatch(/parameters.header: must be an https link or a media id/);
    const noButton = await create(s, b, { ...photo, parameters: { header: photo.parameters.header } });
    expect(noButton.json().error).toMatch(/parameters.buttons\[0\]/);
  });
});

describe("editing and deleting drafts", () => {
  it("changes a draft, checked like a new one; deletes it", async ({ s }) => {
    const b = await ready(s);
    const campaign = await created(s, b);
    const patched = await api(s, b.user.headers, "PATCH", `/api/campaigns/${campaign.id}`, {
      name: "Renamed",
      audience: { tags_none: ["churned"] },
    });
    expect(patched.statusCode).toBe(200);
    expect(patched.json().campaign).toMatchObject({ name: "Renamed", audience: { tags_none: ["churned"] } });
    const bad = await api(s, b.user.headers, "PATCH", `/api/campaigns/${campaign.id}`, {
      parameters: { body: ["x"] },
    });
    expect(bad.statusCode).toBe(400);
    expect((await get(s, b, campaign.id)).parameters.body).toHaveLength(2);
    expect((await api(s, b.user.headers, "PATCH", `/api/campaigns/${campaign.id}`, {})).statusCode).toBe(400);
    expect((await api(s, b.user.headers, "DELETE", `/api/campaigns/${campaign.id}`)).json()).toEqual({
      ok: true,
    });
    expect((await api(s, b.user.headers, "GET", `/api/campaigns/${campaign.id}`)).statusCode).toBe(404);
  });

  it("refuses to edit or delete a started campaign (409)", async ({ s }) => {
    const b = await ready(s);
    await addContacts(s.t, b.accountId, 2);
    const campaign = await created(s, b);
    expect((await api(s, b.user.headers, "POST", `/api/campaigns/${campaign.id}/start`)).statusCode).toBe(
      200,
    );
    const patch = await api(s, b.user.headers, "PATCH", `/api/campaigns/${campaign.id}`, { name: "x" });
    expect(patch.statusCode).toBe(409);
    expect(patch.json().error).toMatch(/only a draft can be edited/);
    expect((await api(s, b.user.headers, "DELETE", `/api/campaigns/${campaign.id}`)).statusCode).toBe(409);
    await s.t.app.deps.jobs.drain();
  });
});

describe("access", () => {
  it("lets members look but not start, pause, resume or cancel; hides other accounts' campaigns", async ({
    s,
  }) => {
    const b = await ready(s);
    await addContacts(s.t, b.accountId, 1);
    const campaign = await created(s, b);
    const member = await addMember(s.t.app, b.user);
    expect((await api(s, member.headers, "GET", `/api/campaigns/${campaign.id}`)).statusCode).toBe(200);
    expect((await api(s, member.headers, "GET", `/api/campaigns/${campaign.id}/preview`)).statusCode).toBe(
      200,
    );
    for (const verb of ["start", "pause", "resume", "cancel", "retry-failed"]) {
      const response = await api(s, member.headers, "POST", `/api/campaigns/${campaign.id}/${verb}`);
      expect(response.statusCode, verb).toBe(403);
    }
    expect((await get(s, b, campaign.id)).status).toBe("draft");
    const other = await ready(s);
    for (const [method, path] of [
      ["GET", ""],
      ["GET", "/preview"],
      ["GET", "/recipients"],
      ["GET", "/recipients.csv"],
      ["POST", "/start"],
      ["DELETE", ""],
    ] as const) {
      const response = await api(s, other.user.headers, method, `/api/campaigns/${campaign.id}${path}`);
      expect(response.statusCode, `${method} ${path}`).toBe(404);
    }
    expect((await api(s, null, "GET", "/api/campaigns")).statusCode).toBe(401);
  });
});

describe("preview", () => {
  it("counts recipients, exclusions by reason, and renders three samples with fallbacks", async ({ s }) => {
    const b = await ready(s);
    const vip = await addContacts(s.t, b.accountId, 5, {
      tags: ["vip"],
      attributes: { product: "red shoes" },
    });
    await addContacts(s.t, b.accountId, 2, { tags: ["vip"], optedOut: true });
    await addContacts(s.t, b.accountId, 3, { tags: ["other"] });
    await s.t.database.db.execute(sql`
      insert into contacts (account_id, wa_id, name, phone, tags) values
        (${b.accountId}, 'bsuid-only', 'No Number', null, '{vip}'),
        (${b.accountId}, 'dup-of-first', null, ${vip[0]?.phone}, '{vip}')`);
    const campaign = await created(s, b, restock({ audience: { tags_any: ["vip"] } }));
    const preview = (await api(s, b.user.headers, "GET", `/api/campaigns/${campaign.id}/preview`)).json();
    expect(preview.recipients).toBe(5);
    expect(preview.excluded).toEqual({ opted_out: 2, no_address: 1, duplicate: 1 });
    expect(preview.samples).toHaveLength(3);
    expect(preview.samples[0].text).toMatch(/^Hi (Customer \d+|there), the red shoes you wanted is back\.$/);
  });
});

describe("previewing a draft not saved yet", () => {
  it("counts the audience as edited, with exclusions, and samples once the template is mapped", async ({
    s,
  }) => {
    const b = await ready(s);
    await addContacts(s.t, b.accountId, 4, { tags: ["vip"], attributes: { product: "tea" } });
    await addContacts(s.t, b.accountId, 1, { tags: ["vip"], optedOut: true });
    await addContacts(s.t, b.accountId, 3, { tags: ["other"] });
    const preview = (body: unknown) => api(s, b.user.headers, "POST", "/api/campaigns/preview", body);

    const vip = await preview({ audience: { tags_any: ["vip"] } });
    expect(vip.statusCode, vip.body).toBe(200);
    expect(vip.json()).toEqual({
      recipients: 4,
      excluded: { opted_out: 1, no_address: 0, duplicate: 0 },
      samples: [],
      template_problem: null,
    });
    expect((await preview({ audience: {} })).json().recipients).toBe(7);

    // A mapping still being typed: the count stands, the samples wait and say why.
    const half = await preview({
      audience: { tags_any: ["vip"] },
      template: { name: "restock", language: "en_US" },
      parameters: { body: ["{{contact.name}}"] },
    });
    expect(half.statusCode).toBe(200);
    expect(half.json()).toMatchObject({ recipients: 4, samples: [] });
    expect(half.json().template_problem).toMatch(/parameters.body: .*expects 2 values, got 1/);
    const full = await preview({ ...restock({ audience: { tags_any: ["vip"] } }), name: undefined });
    expect(full.json().template_problem).toBeNull();
    expect(full.json().samples[0].text).toMatch(/^Hi Customer \d+, the tea you wanted is back\.$/);

    const bad = await preview({ audience: { tags_any: "vip" } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error).toMatch(/audience\.tags_any/);
    expect(await rowsOf(s, "campaigns", b.accountId)).toBe(0);
  });
});

describe("running a campaign", () => {
  it("sends a named-placeholder template through the sandbox with parameter_name, and completes", async ({
    s,
  }) => {
    const b = await ready(s);
    await addContacts(s.t, b.accountId, 3, { attributes: { city: "Porto" } });
    const campaign = await created(s, b, {
      name: "Named",
      template: { name: "named_offer", language: "en_US" },
      parameters: {
        body: { first_name: "{{contact.name|friend}}", city: "{{contact.attributes.city|your}}" },
      },
      audience: {},
    });
    const started = await api(s, b.user.headers, "POST", `/api/campaigns/${campaign.id}/start`);
    expect(started.statusCode, started.body).toBe(200);
    await s.t.app.deps.jobs.drain();

    const done = await get(s, b, campaign.id);
    expect(done.counts).toMatchObject({ total: 3, sent: 3, failed: 0 });
    expect(done.status).toBe("completed");
    expect((sends(s)[0]?.body as Json)?.template.components).toEqual([
      {
        type: "body",
        parameters: [
          { type: "text", parameter_name: "first_name", text: expect.stringMatching(/^Customer \d$/) },
          { type: "text", parameter_name: "city", text: "Porto" },
        ],
      },
    ]);
    const sent = await s.t.database.db.execute<{ text: string }>(sql`
      select m.text from campaign_recipients r join messages m on m.id = r.message_id
       where r.campaign_id = ${campaign.id} order by r.contact_id limit 1`);
    expect(sent.rows[0]?.text).toMatch(/^Hello Customer \d, Porto store opens soon\.$/);
  });

  it("answers 400 for an audience that matches nobody, leaving a draft without recipients", async ({ s }) => {
    const b = await ready(s);
    const campaign = await created(s, b, restock({ audience: { tags_any: ["nobody"] } }));
    const response = await api(s, b.user.headers, "POST", `/api/campaigns/${campaign.id}/start`);
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toMatch(/audience: matches no contact/);
    expect((await get(s, b, campaign.id)).status).toBe("draft");
    expect(await rowsOf(s, "campaign_recipients", b.accountId)).toBe(0);
    expect(sends(s)).toHaveLength(0);
  });

  it("sends every recipient exactly once, into their conversation, and completes", async ({ s }) => {
    const b = await ready(s);
    const people = await addContacts(s.t, b.accountId, 60, { attributes: { product: "lamp" } });
    const campaign = await created(s, b);
    const started = await api(s, b.user.headers, "POST", `/api/campaigns/${campaign.id}/start`);
    expect(started.statusCode).toBe(200);
    expect(started.json().campaign).toMatchObject({ status: "running", counts: { total: 60 } });
    const again = await api(s, b.user.headers, "POST", `/api/campaigns/${campaign.id}/start`);
    expect(again.statusCode).toBe(409);
    expect(again.json().error).toMatch(/running: only a draft can be started/);
    await s.t.app.deps.jobs.drain();

    const done = await get(s, b, campaign.id);
    expect(done.status).toBe("completed");
    expect(done.completed_at).not.toBeNull();
    expect(done.counts).toMatchObject({ total: 60, sent: 60, queued: 0, failed: 0 });
    const to = sends(s).map((r) => (r.body as Json).to);
    expect(to.sort()).toEqual(people.map((p) => p.phone));
    expect((sends(s)[0]?.body as Json)?.template.components).toEqual([
      {
        type: "body",
        parameters: [expect.objectContaining({ type: "text" }), { type: "text", text: "lamp" }],
      },
    ]);

    const page = (
      await api(s, b.user.headers, "GET", `/api/campaigns/${campaign.id}/recipients?limit=50`)
    ).json();
    expect(page.recipients).toHaveLength(50);
    expect(page.recipients[0]).toEqual({
      contact_id: expect.any(String),
      name: expect.stringMatching(/^Customer/),
      phone: expect.any(String),
      status: "sent",
      message_id: expect.any(String),
      error_code: null,
      error_title: null,
      skipped_reason: null,
      updated_at: expect.any(String),
    });
    const rest = (
      await api(
        s,
        b.user.headers,
        "GET",
        `/api/campaigns/${campaign.id}/recipients?limit=50&cursor=${page.next_cursor}`,
      )
    ).json();
    expect(rest.recipients).toHaveLength(10);
    expect(rest.next_cursor).toBeNull();

    const { rows } = await s.t.database.db.execute<{ conversation_id: string }>(
      sql`select conversation_id from messages where id = ${page.recipients[0].message_id}`,
    );
    const thread = await messagesOf(s, b, rows[0]?.conversation_id as string);
    expect(thread.at(-1)).toMatchObject({
      type: "template",
      status: "sent",
      text: expect.stringMatching(/lamp you wanted/),
    });

    const csv = await api(s, b.user.headers, "GET", `/api/campaigns/${campaign.id}/recipients.csv`);
    expect(csv.headers["content-type"]).toMatch(/text\/csv/);
    const lines = csv.body.trim().split("\r\n");
    expect(lines[0]).toBe(
      "contact_id,name,phone,status,message_id,error_code,error_title,skipped_reason,updated_at",
    );
    expect(lines).toHaveLength(61);
    // The first row is the first recipient as the API lists it (both go in contact id order).
    const first = page.recipients[0] as Json;
    expect(lines[1]).toBe(
      [
        first.contact_id,
        first.name,
        first.phone,
        "sent",
        first.message_id,
        "",
        "",
        "",
        first.updated_at,
      ].join(","),
    );

    // The last change's event is held back to keep one a second: its job is due within 1.1 s (the
    // loop waits up to 10 s for it, as a loaded test machine can take a few seconds to run it).
    let updates: Json[] = [];
    for (let tries = 0; tries < 100; tries++) {
      const events = (await api(s, b.user.headers, "GET", "/api/events?limit=500")).json().events as Json[];
      updates = events.filter((e) => e.type === "campaign.updated" && e.data.id === campaign.id);
      if (updates.at(-1)?.data.status === "completed") break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(updates.at(-1)?.data).toMatchObject({
      id: campaign.id,
      status: "completed",
      counts: { sent: 60 },
    });
    // At most one a second.
    const times = updates.map((e) => Date.parse(e.created_at));
    for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(1000);
  });

  it("records Meta's refusals: 131026 failed with code and title, 131049 deferred, opted out since: skipped", async ({
    s,
  }) => {
    const b = await ready(s);
    const people = await addContacts(s.t, b.accountId, 4);
    // Scheduled an hour ahead, so that nothing is sent until the test brings the time forward (a
    // campaign started at once could send before the opt-out below).
    const campaign = await created(s, b, restock({ scheduled_at: inAnHour() }));
    const sendJobsDueNow = () =>
      s.t.database.db.execute(sql`update graphile_worker._private_jobs set run_at = now()
        where key like ${`campaign-send:${campaign.id}:%`}`);
    s.sandbox.inject(
      { method: "POST", path: /\/messages$/ },
      { status: 400, error: { code: 131026, message: "Message Undeliverable" } },
    );
    // Opted out after the snapshot: checked again at send time.
    const started = await api(s, b.user.headers, "POST", `/api/campaigns/${campaign.id}/start`);
    expect(started.json().campaign).toMatchObject({ status: "scheduled", counts: { total: 4 } });
    await s.t.database.db.execute(sql`update contacts set opted_out = true where id = ${people[3]?.id}`);
    s.sandbox.inject(
      { method: "POST", path: /\/messages$/ },
      {
        status: 400,
        error: {
          code: 131049,
          message: "This message was not delivered to maintain healthy ecosystem engagement.",
        },
      },
    );
    // The hour is over.
    await s.t.database.db.execute(sql`update campaigns set scheduled_at = now() where id = ${campaign.id}`);
    await sendJobsDueNow();
    await s.t.app.deps.jobs.drain();
    const done = await get(s, b, campaign.id);
    expect(done.counts).toMatchObject({ total: 4, failed: 1, deferred: 1, skipped: 1, sent: 1 });
    expect(done.status).toBe("running");
    const failed = (
      await api(s, b.user.headers, "GET", `/api/campaigns/${campaign.id}/recipients?status=failed`)
    ).json();
    expect(failed.recipients[0]).toMatchObject({
      error_code: "131026",
      error_title: "Message Undeliverable",
    });
    const skipped = (
      await api(s, b.user.headers, "GET", `/api/campaigns/${campaign.id}/recipients?status=skipped`)
    ).json();
    expect(skipped.recipients[0]).toMatchObject({ contact_id: people[3]?.id, skipped_reason: "opted_out" });
    const deferred = (
      await api(s, b.user.headers, "GET", `/api/campaigns/${campaign.id}/recipients?status=deferred`)
    ).json();
    expect(deferred.recipients[0]).toMatchObject({ error_code: "131049" });
    // Deferred a day (Meta's per-user marketing limit), then tried once more.
    const { rows: due } = await s.t.database.db.execute<{ hours: number }>(sql`
      select extract(epoch from next_attempt_at - now()) / 3600 as hours
        from campaign_recipients where campaign_id = ${campaign.id} and status = 'deferred'`);
    expect(Number(due[0]?.hours)).toBeGreaterThan(23.9);
    expect(Number(due[0]?.hours)).toBeLessThanOrEqual(24);

    // The day is over: tried once more, and it goes.
    await s.t.database.db.execute(
      sql`update campaign_recipients set next_attempt_at = now() where status = 'deferred'`,
    );
    await sendJobsDueNow();
    await s.t.app.deps.jobs.drain();
    const after = await get(s, b, campaign.id);
    expect(after.counts).toMatchObject({ deferred: 0, sent: 2, failed: 1, skipped: 1 });
    expect(after.status).toBe("completed");

    // 131026 is final: nothing to retry.
    const retry = await api(s, b.user.headers, "POST", `/api/campaigns/${campaign.id}/retry-failed`);
    expect(retry.json()).toMatchObject({ requeued: 0 });
    // 131026, 131049, the one that went, and the deferred one tried again.
    expect(sends(s)).toHaveLength(4);
  });

  it("a triple resume sends nobody twice", async ({ s }) => {
    const b = await ready(s);
    await addContacts(s.t, b.accountId, 80);
    const campaign = await created(s, b);
    await api(s, b.user.headers, "POST", `/api/campaigns/${campaign.id}/start`);
    const paused = await api(s, b.user.headers, "POST", `/api/campaigns/${campaign.id}/pause`);
    expect(paused.json().campaign.status).toBe("paused");
    const resumes = await Promise.all(
      [1, 2, 3].map(() => api(s, b.user.headers, "POST", `/api/campaigns/${campaign.id}/resume`)),
    );
    expect(resumes.map((r) => r.statusCode).sort()).toEqual([200, 409, 409]);
    await s.t.app.deps.jobs.drain();
    const to = sends(s).map((r) => (r.body as Json).to);
    expect(new Set(to).size).toBe(to.length);
    expect(to).toHaveLength(80);
    expect((await get(s, b, campaign.id)).status).toBe("completed");
  });

  it("cancels: queued recipients are skipped; a cancelled campaign cannot resume", async ({ s }) => {
    const b = await ready(s);
    await addContacts(s.t, b.accountId, 10);
    const campaign = await created(s, b, restock({ scheduled_at: inAnHour() }));
    const started = await api(s, b.user.headers, "POST", `/api/campaigns/${campaign.id}/start`);
    expect(started.json().campaign.status).toBe("scheduled");
    const cancelled = await api(s, b.user.headers, "POST", `/api/campaigns/${campaign.id}/cancel`);
    expect(cancelled.json().campaign).toMatchObject({
      status: "cancelled",
      counts: { skipped: 10, queued: 0 },
    });
    const resume = await api(s, b.user.headers, "POST", `/api/campaigns/${campaign.id}/resume`);
    expect(resume.statusCode).toBe(409);
    expect(resume.json().error).toMatch(/cancelled: only a paused campaign can be resumed/);
    await s.t.app.deps.jobs.drain();
    expect(sends(s)).toHaveLength(0);
  });

  it("forgets the recipient rows of a deleted contact and of a deleted campaign", async ({ s }) => {
    const b = await ready(s);
    const people = await addContacts(s.t, b.accountId, 3);
    const campaign = await created(s, b, restock({ scheduled_at: inAnHour() }));
    await api(s, b.user.headers, "POST", `/api/campaigns/${campaign.id}/start`);
    await s.t.database.db.execute(sql`delete from contacts where id = ${people[0]?.id}`);
    expect((await get(s, b, campaign.id)).counts.total).toBe(2);
    await s.t.database.db.execute(sql`delete from campaigns where id = ${campaign.id}`);
    expect(await rowsOf(s, "campaign_recipients", b.accountId)).toBe(0);
    const { rows } = await s.t.database.db.execute<{ n: number }>(
      sql`select count(*)::int as n from campaign_recipients where campaign_id = ${campaign.id}`,
    );
    expect(rows[0]?.n).toBe(0);
  });

  it("test-sends to one number, not a recipient", async ({ s }) => {
    const b = await ready(s);
    const campaign = await created(s, b);
    const response = await api(s, b.user.headers, "POST", `/api/campaigns/${campaign.id}/test`, {
      phone: "+1 555 010 9999",
    });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().message).toMatchObject({
      type: "template",
      text: "Hi there, the item you wanted is back.",
    });
    expect(sends(s).map((r) => (r.body as Json).to)).toEqual(["15550109999"]);
    expect((await get(s, b, campaign.id)).counts.total).toBe(0);
  });
});

describe("what Meta's webhooks do to a campaign", () => {
  it("moves recipients to delivered, read and replied; an opt-out keyword opts the contact out", async ({
    s,
  }) => {
    const b = await ready(s);
    const customer = customerOf(s, b);
    const customer2 = customerOf(s, b);
    const campaign = await created(s, b);
    // The customers exist as contacts once they have written.
    await customer.text("hello");
    await customer2.text("hi");
    await api(s, b.user.headers, "POST", `/api/campaigns/${campaign.id}/start`);
    await s.t.app.deps.jobs.drain();
    const recipients = (
      await api(s, b.user.headers, "GET", `/api/campaigns/${campaign.id}/recipients`)
    ).json().recipients as Json[];
    const wamidOf = async (messageId: string) => {
      const { rows } = await s.t.database.db.execute<{ message_id: string }>(
        sql`select message_id from messages where id = ${messageId}`,
      );
      return rows[0]?.message_id as string;
    };
    const first = recipients.find((r) => r.phone === customer.waId);
    const second = recipients.find((r) => r.phone === customer2.waId);
    await customer.status({ messageId: await wamidOf(first.message_id), status: "delivered" });
    await customer.status({ messageId: await wamidOf(first.message_id), status: "read" });
    await customer2.status({ messageId: await wamidOf(second.message_id), status: "delivered" });
    await customer2.text("stop");
    const counts = (await get(s, b, campaign.id)).counts;
    expect(counts).toMatchObject({ read: 1, replied: 1, total: 2 });
    const { rows } = await s.t.database.db.execute<{ opted_out: boolean }>(
      sql`select opted_out from contacts where id = ${second.contact_id}`,
    );
    expect(rows[0]?.opted_out).toBe(true);
  });

  it("pauses the campaign when Meta pauses its template", async ({ s }) => {
    const b = await ready(s);
    await addContacts(s.t, b.accountId, 3);
    const campaign = await created(s, b, restock({ scheduled_at: inAnHour() }));
    await api(s, b.user.headers, "POST", `/api/campaigns/${campaign.id}/start`);
    const { payload } = templateStatusPayload({
      businessAccountId: b.businessAccountId,
      templateId: "800000000000001",
      name: "restock",
      language: "en_US",
      event: "PAUSED",
    });
    expect((await postWebhook(s.t.app, payload)).statusCode).toBe(200);
    await s.t.app.deps.jobs.drain();
    expect(await get(s, b, campaign.id)).toMatchObject({
      status: "paused",
      paused_reason: "template_paused",
    });
  });
});
