/**
 * The background side under load (issue: durable processing): how long a bot
 * reply takes at low load, and what a flood of trigger messages does, with one
 * and with two instances of the service, and with one instance against Meta's
 * round trip imitated by the sandbox. Figures are ratios within one run.
 */
import pg from "pg";
import { inboundTextPayload, signPayload } from "../src/upstream/sandbox/webhook-payloads.js";
import { cpuAvailable, parentOf, processCpuMs, treeCpuMs } from "./cpu.js";

export interface DurableInputs {
  /** The service(s) to post to. */
  api: string;
  sandbox: string;
  databaseUrl: string;
  appSecret: string;
  phoneNumberId: string;
  memberToken: string;
  /** Runs one load process (bench/load.ts) and gives its result. */
  load: (scenario: import("./load.js").Scenario) => Promise<import("./load.js").LoadResult>;
  /** Starts a second instance on the same database; gives its URL and pid. */
  startSecond: () => Promise<{ url: string; pid: number }>;
  rssOf: (pid: number) => number;
  servicePid: number;
  log: (m: string) => void;
  /** `--pg-stats`: report what PostgreSQL did during the flood at once (see watchDatabase). */
  pgStats?: boolean;
  /** Triggers in each flood against an upstream that answers at once. */
  flood: number;
  /** Triggers in the flood against Meta's round trip imitated (its replies come slower). */
  latencyFlood: number;
  /** The bare reply pipeline (bench/bare.ts) on the same database and sandbox. */
  bare?: Yardstick;
  /** `--bound`: the batched bound (bench/batched.ts), a diagnostic measured like the bare pipeline. */
  bound?: Yardstick;
  /** The sandbox's process, whose CPU each flood reports (with the service's and PostgreSQL's). */
  sandboxPid?: number;
  /** PostgreSQL's postmaster (set by runDurableBench where /proc can be read). */
  postmasterPid?: number;
}

/** A plain script that answers the floods in the service's place, to measure the service against. */
export interface Yardstick {
  kind: "bare" | "bound";
  url: string;
  pid: number;
  reply: string;
}

/** How a yardstick's floods are told apart: its log's words and its customers' number digit. */
const YARDSTICKS = {
  bare: { prefix: "bare pipeline: ", replier: "the bare pipeline", digit: 8 },
  bound: { prefix: "batched bound: ", replier: "the batched bound", digit: 9 },
} as const;

/** CPU time a flood cost, per reply, in ms: the replying processes', PostgreSQL's (all its processes), the sandbox's. */
export interface CpuPerReply {
  replier: number;
  postgres: number;
  sandbox: number;
}

/** Medians at low load, from a delivery's POST: the reply the sandbox got, and the webhook's answer. */
export interface Latency {
  medianReplyMs: number;
  medianAckMs: number;
  ratio: number;
  samples: number;
}

export interface DurableResults {
  replyLatency: Latency;
  /** A customer's answer to a flow's question, at low load: to the flow's next message. */
  answerLatency?: Latency;
  floods: Array<{
    instances: number;
    /** How long the sandbox made each Graph API call wait (0: answered at once). */
    upstreamLatencyMs: number;
    deliveries: number;
    ackPerSecond: number;
    repliesPerSecond: number;
    ratio: number;
    exactlyOnce: boolean;
    missing: number;
    duplicates: number;
    peakRssMb: number;
    /** Measured against the bare reply pipeline, not the service. */
    bare?: boolean;
    /** Measured against the batched bound (bench/batched.ts), not the service. */
    bound?: boolean;
    /** Answered at once, with as many triggers as the flood at Meta's round trip (its 0.8 x target). */
    sameAsSlow?: boolean;
    /** Where /proc can be read. */
    cpuPerReply?: CpuPerReply;
  }>;
  /** The send rate held at messages_per_second 10: the most sends in any one-second window. */
  rateHeld?: { limit: number; sends: number; busiestSecond: number; seconds: number };
}

interface SandboxRequest {
  method: string;
  path: string;
  body: { to?: string; text?: { body?: string } };
  at: string;
}

async function sandboxSends(sandbox: string, text: string): Promise<SandboxRequest[]> {
  const response = await fetch(`${sandbox}/_sandbox/requests`);
  const { requests, dropped } = (await response.json()) as { requests: SandboxRequest[]; dropped: number };
  // A count from a log that forgot requests would be wrong: the flood must fit SANDBOX_LOG_LIMIT.
  if (dropped > 0) throw new Error(`the sandbox's request log forgot ${dropped} requests`);
  return requests.filter(
    (r) => r.method === "POST" && r.path.endsWith("/messages") && r.body.text?.body === text,
  );
}

async function api(base: string, token: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status >= 300)
    throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return response.json() as Promise<Record<string, { id: string }>>;
}

/** An active flow that `keyword` starts, made of `nodes` (entered at `start`); gives its id. */
async function keywordFlow(i: DurableInputs, keyword: string, nodes: object[]) {
  const { flow } = await api(i.api, i.memberToken, "POST", "/api/flows", {
    name: `bench ${keyword}`,
    trigger_type: "keyword",
    trigger_config: { keywords: [keyword], match_type: "exact" },
  });
  await api(i.api, i.memberToken, "PUT", `/api/flows/${flow!.id}`, { entry_node_id: "start", nodes });
  await api(i.api, i.memberToken, "POST", `/api/flows/${flow!.id}/activate`, { status: "active" });
  return flow!.id;
}

/** An active keyword flow answering `keyword` with `reply`. */
async function replyFlow(i: DurableInputs, keyword: string, reply: string) {
  await keywordFlow(i, keyword, [
    { node_key: "start", node_type: "start", config: { next_node_key: "hello" } },
    { node_key: "hello", node_type: "send_message", config: { text: reply } },
  ]);
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
};

/** The probes' medians, and the reply's against the webhook's answer. */
const latency = (replyMs: number[], ackMs: number[]): Latency => ({
  medianReplyMs: median(replyMs),
  medianAckMs: median(ackMs),
  ratio: median(replyMs) / Math.max(median(ackMs), 1),
  samples: replyMs.length,
});

/** Waits until no background job is due or running. */
export async function drainJobs(databaseUrl: string, timeoutMs = 600_000): Promise<number> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const started = Date.now();
  try {
    for (;;) {
      const { rows } = await client.query<{ n: number }>(
        `select count(*)::int as n from graphile_worker._private_jobs
          where locked_at is not null or (run_at <= now() and attempts < max_attempts)`,
      );
      if ((rows[0]?.n ?? 0) === 0) return Date.now() - started;
      if (Date.now() - started > timeoutMs) throw new Error("background jobs did not drain");
      await new Promise((r) => setTimeout(r, 200));
    }
  } finally {
    await client.end();
  }
}

/**
 * Empties the sandbox's request log. The probe reads the log every 25 ms; after the HTTP scenarios
 * (the reactions alone leave some 10,000 requests at full scale) each read would be megabytes of
 * JSON, and the "low load" would be the sandbox's own.
 */
/** What the latency flood imitates: a Graph API call's round trip from a server far from Meta's. */
const UPSTREAM_LATENCY_MS = 150;

async function clearSandboxLog(sandbox: string) {
  const response = await fetch(`${sandbox}/_sandbox/requests`, { method: "DELETE" });
  if (response.status !== 200) throw new Error(`clearing the sandbox's log: ${response.status}`);
}

/** Posts one signed inbound text from `waId`, stamped `timestamp` (seconds); gives when it was posted and its answer's time. */
async function postText(
  i: DurableInputs,
  waId: string,
  text: string,
  timestamp = Math.floor(Date.now() / 1000),
) {
  const { payload } = inboundTextPayload({
    phoneNumberId: i.phoneNumberId,
    from: waId,
    name: "Probe",
    timestamp,
    text,
  });
  const body = JSON.stringify(payload);
  const started = Date.now();
  const response = await fetch(`${i.api}/api/messaging/webhook`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-hub-signature-256": signPayload(body, i.appSecret),
    },
    body,
  });
  if (response.status !== 200) throw new Error(`probe answered ${response.status}`);
  return { started, ackMs: Date.now() - started };
}

/** When the sandbox got `text` for `waId` (the last such send after `before` of them), looked for every 25 ms. */
async function sentAt(
  i: DurableInputs,
  text: string,
  waId: string | undefined,
  before: number,
  since: number,
) {
  for (;;) {
    const sends = (await sandboxSends(i.sandbox, text)).filter(
      (r) => waId === undefined || r.body.to === waId,
    );
    if (sends.length > before) return new Date(sends.at(-1)!.at).getTime();
    if (Date.now() - since > 10_000) throw new Error(`no "${text}" within 10 s`);
    // The reply's time is the sandbox's record of it, not this look: polling more often would
    // only load the two cores the service runs on, which is not "low load".
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * A customer answering a flow's question, at low load: each of 20 customers triggers a question,
 * and once Meta's answer to it is recorded (the run waits for the customer), answers it; the time
 * from the answer's POST to the sandbox receiving the flow's next message.
 */
async function answerProbe(i: DurableInputs): Promise<Latency> {
  const question = "Answer probe question?";
  const reply = "Answer probe reply";
  const flowId = await keywordFlow(i, "answerprobe", [
    { node_key: "start", node_type: "start", config: { next_node_key: "ask" } },
    {
      node_key: "ask",
      node_type: "collect_input",
      config: { prompt_text: question, var_key: "name", next_node_key: "thanks" },
    },
    { node_key: "thanks", node_type: "send_message", config: { text: reply } },
  ]);
  const client = new pg.Client({ connectionString: i.databaseUrl });
  await client.connect();
  const replyMs: number[] = [];
  const ackMs: number[] = [];
  try {
    for (let n = 0; n < 20; n++) {
      const waId = `57${String(n).padStart(10, "0")}`;
      const asked = await postText(i, waId, "answerprobe");
      await sentAt(i, question, waId, 0, asked.started);
      // Meta's answer to the question recorded: the run waits for the customer.
      for (const since = Date.now(); ; ) {
        const { rows } = await client.query(
          `select 1 from flow_runs r join contacts c on c.id = r.contact_id
            where r.flow_id = $1 and c.wa_id = $2 and r.status = 'active'
              and r.awaiting_message_id is null and r.question_sent_at is not null`,
          [flowId, waId],
        );
        if (rows.length) break;
        if (Date.now() - since > 10_000) throw new Error("the question's send was not recorded within 10 s");
        await new Promise((r) => setTimeout(r, 25));
      }
      // Answered at once (a pause of a second would measure this machine's idle cores waking up:
      // see docs/benchmarks.md), stamped as a person's answer is, a second after the question.
      const answered = await postText(i, waId, `Probe ${n}`, Math.floor(Date.now() / 1000) + 1);
      ackMs.push(answered.ackMs);
      replyMs.push((await sentAt(i, reply, waId, 0, answered.started)) - answered.started);
    }
  } finally {
    await client.end();
  }
  return latency(replyMs, ackMs);
}

export async function runDurableBench(inputs: DurableInputs): Promise<DurableResults> {
  // The server's processes do not change during the run: its postmaster is looked up once.
  const i = { ...inputs, postmasterPid: cpuAvailable ? await postmasterPid(inputs.databaseUrl) : undefined };
  // (1) Reply latency at low load: one trigger at a time, from the POST to the sandbox receiving the reply.
  await clearSandboxLog(i.sandbox);
  await replyFlow(i, "latencyprobe", "Latency probe reply");
  const replyMs: number[] = [];
  const ackMs: number[] = [];
  for (let n = 0; n < 40; n++) {
    const waId = `59${String(n).padStart(10, "0")}`;
    const before = (await sandboxSends(i.sandbox, "Latency probe reply")).length;
    const posted = await postText(i, waId, "latencyprobe");
    ackMs.push(posted.ackMs);
    replyMs.push(
      (await sentAt(i, "Latency probe reply", undefined, before, posted.started)) - posted.started,
    );
  }
  const replyLatency = latency(replyMs, ackMs);
  i.log(
    `bot reply latency at low load: median ${replyLatency.medianReplyMs} ms from POST to reply, webhook answer ${replyLatency.medianAckMs} ms (${replyLatency.ratio.toFixed(1)}x)`,
  );
  const answerLatency = await answerProbe(i);
  i.log(
    `bot reply to an answer at low load: median ${answerLatency.medianReplyMs} ms from POST to the next message, webhook answer ${answerLatency.medianAckMs} ms (${answerLatency.ratio.toFixed(1)}x)`,
  );

  // (2) Floods of trigger deliveries from new customers at 50 connections: one instance against
  // Meta's round trip imitated by the sandbox (the jobs then mostly wait), then one and two
  // instances against an upstream that answers at once (the jobs then mostly work).
  const floods: DurableResults["floods"] = [];
  floods.push(await flood(i, { instances: 1, size: i.latencyFlood, latencyMs: UPSTREAM_LATENCY_MS }));
  // Issue 24 compares the flood at Meta's round trip with "the same flood" answered at once: the
  // same number of triggers, so that the start of a flood and its last replies weigh the same in
  // both (the larger flood below has five times the triggers and serves the other targets).
  floods.push(await flood(i, { instances: 1, size: i.latencyFlood, latencyMs: 0, sameAsSlow: true }));
  const watching = i.pgStats ? await watchDatabase(i.databaseUrl, i.log) : undefined;
  floods.push(await flood(i, { instances: 1, size: i.flood, latencyMs: 0 }));
  await watching?.();
  // The yardsticks, same sizes, same sandbox, same database: the bare pipeline (issue 24's), and
  // with --bound the batched bound.
  for (const yardstick of [i.bare, i.bound]) {
    if (!yardstick) continue;
    floods.push(
      await flood(i, { instances: 1, size: i.latencyFlood, latencyMs: UPSTREAM_LATENCY_MS, yardstick }),
    );
    floods.push(await flood(i, { instances: 1, size: i.flood, latencyMs: 0, yardstick }));
  }
  const rateHeld = await holdRate(i, 10);
  const second = await i.startSecond();
  floods.push(await flood(i, { instances: 2, size: i.flood, latencyMs: 0, second }));
  return { replyLatency, answerLatency, floods, rateHeld };
}

/**
 * The number's messages_per_second set to `limit`: a burst of triggers, and the most replies the
 * sandbox received in any one-second window (never more than `limit`). The rate is put back after.
 */
async function holdRate(i: DurableInputs, limit: number): Promise<NonNullable<DurableResults["rateHeld"]>> {
  const client = new pg.Client({ connectionString: i.databaseUrl });
  await client.connect();
  const { rows } = await client.query<{ rate: number }>(
    "select messages_per_second as rate from messaging_configs where phone_number_id = $1",
    [i.phoneNumberId],
  );
  await client.query("update messaging_configs set messages_per_second = $2 where phone_number_id = $1", [
    i.phoneNumberId,
    limit,
  ]);
  try {
    await clearSandboxLog(i.sandbox);
    const keyword = "ratehold";
    const reply = "Rate held reply";
    await replyFlow(i, keyword, reply);
    const count = limit * 6;
    const started = Date.now();
    await i.load({
      url: `${i.api}/api/messaging/webhook`,
      method: "POST",
      connections: 10,
      durationSeconds: 600,
      amount: count,
      webhook: {
        appSecret: i.appSecret,
        phoneNumberId: i.phoneNumberId,
        waIds: [],
        newCustomers: "690",
        text: keyword,
      },
    });
    const sends = await waitForReplies(i.sandbox, reply, count);
    const times = sends.map((r) => new Date(r.at).getTime()).sort((a, b) => a - b);
    let busiest = 0;
    for (let a = 0, b = 0; a < times.length; a++) {
      while (b < times.length && (times[b] as number) < (times[a] as number) + 1000) b++;
      busiest = Math.max(busiest, b - a);
    }
    const result = {
      limit,
      sends: sends.length,
      busiestSecond: busiest,
      seconds: ((times.at(-1) ?? started) - started) / 1000,
    };
    i.log(
      `rate held at messages_per_second ${limit}: ${result.sends} replies in ${result.seconds.toFixed(1)} s, at most ${busiest} in any one-second window`,
    );
    return result;
  } finally {
    await client.query("update messaging_configs set messages_per_second = $2 where phone_number_id = $1", [
      i.phoneNumberId,
      rows[0]?.rate ?? 80,
    ]);
    await client.end();
  }
}

/** Waits until the sandbox got `expected` replies (sends are in flight after the jobs are done), or they stop coming. */
async function waitForReplies(sandbox: string, reply: string, expected: number, quietMs = 10_000) {
  let last = -1;
  let since = Date.now();
  for (;;) {
    const sends = await sandboxSends(sandbox, reply);
    if (sends.length >= expected) return sends;
    if (sends.length !== last) {
      last = sends.length;
      since = Date.now();
    } else if (Date.now() - since > quietMs) return sends;
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function setSandboxLatency(sandbox: string, ms: number) {
  const response = await fetch(`${sandbox}/_sandbox/latency`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ ms }),
  });
  if (response.status !== 200) throw new Error(`the sandbox refused the latency: ${response.status}`);
}

/** `size` trigger deliveries at 50 connections, spread over the instances; measured to the last reply. */
async function flood(
  i: DurableInputs,
  options: {
    instances: number;
    size: number;
    latencyMs: number;
    second?: { url: string; pid: number };
    /** Answers in the service's place. */
    yardstick?: Yardstick;
    sameAsSlow?: boolean;
  },
): Promise<DurableResults["floods"][number]> {
  const { instances, second, latencyMs, yardstick: stick, sameAsSlow } = options;
  const told = stick && YARDSTICKS[stick.kind];
  await clearSandboxLog(i.sandbox);
  await setSandboxLatency(i.sandbox, latencyMs);
  const keyword = `flood${instances}l${latencyMs}${stick?.kind ?? ""}${sameAsSlow ? "same" : ""}`;
  const reply = stick ? stick.reply : `Flood ${instances} (${latencyMs} ms) reply`;
  if (!stick) await replyFlow(i, keyword, reply);
  const pids = stick ? [stick.pid] : [i.servicePid, ...(second ? [second.pid] : [])];
  const postmaster = i.postmasterPid;
  const cpuNow = (): CpuPerReply => ({
    replier: pids.reduce((sum, pid) => sum + processCpuMs(pid), 0),
    postgres: postmaster ? treeCpuMs(postmaster) : 0,
    sandbox: i.sandboxPid ? treeCpuMs(i.sandboxPid) : 0,
  });
  const cpuBefore = cpuNow();
  let peak = 0;
  const sampler = setInterval(() => {
    for (const pid of pids) peak = Math.max(peak, i.rssOf(pid));
  }, 100);
  const started = Date.now();
  const targets = stick ? [stick.url] : [i.api, ...(second ? [second.url] : [])];
  const per = Math.ceil(options.size / targets.length);
  const acks = await Promise.all(
    targets.map((url, t) =>
      i.load({
        url: `${url}/api/messaging/webhook`,
        method: "POST",
        connections: Math.floor(50 / targets.length),
        durationSeconds: 600,
        amount: per,
        webhook: {
          appSecret: i.appSecret,
          phoneNumberId: i.phoneNumberId,
          waIds: [],
          newCustomers: `6${instances}${latencyMs > 0 ? 1 : 0}${told ? told.digit : sameAsSlow ? 7 : t}`,
          text: keyword,
        },
      }),
    ),
  );
  const ackSeconds = (Date.now() - started) / 1000;
  const acked = acks.reduce((sum, r) => sum + r.requests - r.non2xx - r.errors, 0);
  if (!stick) await drainJobs(i.databaseUrl);
  // The jobs are done before the last sends are: those are in flight, off the job queue.
  const sends = await waitForReplies(i.sandbox, reply, acked);
  const cpuAfter = cpuNow();
  clearInterval(sampler);
  await setSandboxLatency(i.sandbox, 0);
  const lastReply = Math.max(...sends.map((s) => new Date(s.at).getTime()));
  const replySeconds = (lastReply - started) / 1000;
  const perCustomer = new Map<string, number>();
  for (const s of sends) perCustomer.set(s.body.to ?? "", (perCustomer.get(s.body.to ?? "") ?? 0) + 1);
  const duplicates = [...perCustomer.values()].filter((n) => n > 1).length;
  const result = {
    instances,
    upstreamLatencyMs: latencyMs,
    deliveries: acked,
    ackPerSecond: acked / ackSeconds,
    repliesPerSecond: sends.length / replySeconds,
    ratio: sends.length / replySeconds / (acked / ackSeconds),
    exactlyOnce: perCustomer.size === acked && duplicates === 0,
    missing: acked - perCustomer.size,
    duplicates,
    peakRssMb: peak,
    ...(stick ? { [stick.kind]: true } : {}),
    ...(sameAsSlow ? { sameAsSlow: true } : {}),
    ...(postmaster && sends.length > 0
      ? {
          cpuPerReply: {
            replier: (cpuAfter.replier - cpuBefore.replier) / sends.length,
            postgres: (cpuAfter.postgres - cpuBefore.postgres) / sends.length,
            sandbox: (cpuAfter.sandbox - cpuBefore.sandbox) / sends.length,
          },
        }
      : {}),
  };
  const cpu = result.cpuPerReply;
  i.log(
    `${told?.prefix ?? ""}flood of ${acked} triggers, ${instances} instance(s), upstream latency ${latencyMs} ms: ${Math.round(result.ackPerSecond)} acks/s, ${Math.round(result.repliesPerSecond)} replies/s (${result.ratio.toFixed(2)}), exactly once: ${result.exactlyOnce} (${result.missing} missing, ${duplicates} duplicated), peak RSS ${peak.toFixed(0)} MB${cpu ? `; CPU a reply: ${told?.replier ?? "the service"} ${cpu.replier.toFixed(2)} ms, PostgreSQL ${cpu.postgres.toFixed(2)} ms, the sandbox ${cpu.sandbox.toFixed(2)} ms` : ""}`,
  );
  return result;
}

/** The PostgreSQL server's postmaster: the parent of one of its backends. */
async function postmasterPid(url: string): Promise<number | undefined> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number }>("select pg_backend_pid() as pid");
    return rows[0] ? parentOf(rows[0].pid) : undefined;
  } finally {
    await client.end();
  }
}

/**
 * `--pg-stats`: what PostgreSQL does while it is watched. Every 20 ms, what
 * each busy connection waits on (`CPU` when nothing: running, or waiting for a
 * core), by statement; and each statement's calls and time from
 * pg_stat_statements (the embedded server loads it for this run). The
 * returned function stops watching and logs both, heaviest first.
 */
async function watchDatabase(url: string, log: (m: string) => void): Promise<() => Promise<void>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query("create extension if not exists pg_stat_statements");
  await client.query("select pg_stat_statements_reset()");
  await client.query("select pg_stat_reset()");
  const waits = new Map<string, number>();
  let watching = true;
  const sampling = (async () => {
    while (watching) {
      const { rows } = await client.query<{ k: string }>(`
        select coalesce(wait_event_type, 'CPU') || ':' || coalesce(wait_event, '-') || ' '
               || left(regexp_replace(query, '\\s+', ' ', 'g'), 90) as k
          from pg_stat_activity
         where state = 'active' and pid <> pg_backend_pid() and backend_type = 'client backend'`);
      for (const { k } of rows) waits.set(k, (waits.get(k) ?? 0) + 1);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  return async () => {
    watching = false;
    await sampling;
    log("busy connections, sampled every 20 ms (samples, wait, statement):");
    for (const [k, n] of [...waits].sort((a, b) => b[1] - a[1]).slice(0, 30)) log(`  ${n} ${k}`);
    const { rows } = await client.query<Record<string, string>>(`
      select calls, round(total_exec_time)::text as total_ms, round(mean_exec_time::numeric, 3)::text as mean_ms,
             case when toplevel then '' else '(nested) ' end || left(regexp_replace(query, '\\s+', ' ', 'g'), 120) as q
        from pg_stat_statements order by total_exec_time desc limit 30`);
    log(
      "statements by execution time (calls, total ms, mean ms, statement; nested: run by a function or trigger):",
    );
    for (const r of rows) log(`  ${r.calls} ${r.total_ms} ${r.mean_ms} ${r.q}`);
    const functions = await client.query<Record<string, string>>(`
      select calls, round(total_time)::text as total_ms, round(self_time)::text as self_ms, schemaname || '.' || funcname as f
        from pg_stat_user_functions order by self_time desc limit 15`);
    log("functions and triggers by their own time (calls, total ms, self ms, function):");
    for (const r of functions.rows) log(`  ${r.calls} ${r.total_ms} ${r.self_ms} ${r.f}`);
    const tables = await client.query<Record<string, string>>(`
      select n_tup_ins::text as ins, n_tup_upd::text as upd, n_tup_hot_upd::text as hot, n_tup_del::text as del,
             schemaname || '.' || relname as t
        from pg_stat_user_tables where n_tup_ins + n_tup_upd + n_tup_del > 0
       order by n_tup_ins + n_tup_upd + n_tup_del desc limit 20`);
    log("rows written by table (inserted, updated, of which HOT, deleted, table):");
    for (const r of tables.rows) log(`  ${r.ins} ${r.upd} ${r.hot} ${r.del} ${r.t}`);
    await client.end();
  };
}
