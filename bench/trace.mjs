/**
 * A time line of what one service process asks PostgreSQL and the Graph API,
 * for looking into where a request's time goes (docs/benchmarks.md).
 *
 *   BENCH_TRACE=1 NODE_OPTIONS="--import ./bench/trace.mjs" npm run bench -- --quick --only=durable
 *
 * In each service process (dist/main.js) it wraps pg's Client#query, Node's
 * outgoing http.request and the HTTP server's requests, and writes the first
 * 20,000 of them (start and end in ms since the process started, the
 * statement's first 110 characters, the backend's pid) to
 * bench/results/trace-<pid>.json every second. Other processes are left as
 * they are. Statement texts only: never their parameters.
 *
 *   node bench/trace.mjs bench/results/trace-<pid>.json
 *
 * prints, for the first 40 webhook deliveries (the bench's low-load reply
 * probe), the medians of the webhook's answer, the reply's time from the
 * POST to its Graph API call, the bot's advance (its transaction) and the gap
 * between that transaction's commit and the reply's call.
 */
import fs from "node:fs";
import http from "node:http";
import { createRequire } from "node:module";
import path from "node:path";

const LIMIT = 20_000;

function record() {
  const require = createRequire(path.join(process.cwd(), "package.json"));
  const entries = [];
  const t0 = performance.now();
  const now = () => Number((performance.now() - t0).toFixed(2));
  const keep = (entry) => {
    if (entries.length < LIMIT) entries.push(entry);
    return entry;
  };
  const pg = require("pg");
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function traced(config, values, callback) {
    const text = typeof config === "string" ? config : (config?.text ?? config?.name);
    const entry = keep({
      s: now(),
      q: String(text).replace(/\s+/g, " ").slice(0, 110),
      c: this.processID,
      tag: "pg",
    });
    // A query given a callback (pg.Pool#query passes one) is timed by wrapping it.
    const end = (fn) =>
      function ended(...args) {
        entry.e = now();
        return fn.apply(this, args);
      };
    if (typeof values === "function") values = end(values);
    else if (typeof callback === "function") callback = end(callback);
    else if (typeof config?.callback === "function") config.callback = end(config.callback);
    const result = query.call(this, config, values, callback);
    if (typeof result?.then === "function")
      result.then(
        () => (entry.e = now()),
        () => (entry.e = now()),
      );
    return result;
  };
  const request = http.request;
  http.request = function traced(...args) {
    const options = args[0];
    const entry = keep({
      s: now(),
      q: `HTTP ${typeof options === "string" ? options : (options?.path ?? "")}`,
      tag: "http",
    });
    const req = request.apply(this, args);
    req.on("response", () => (entry.e = now()));
    return req;
  };
  const emit = http.Server.prototype.emit;
  http.Server.prototype.emit = function traced(event, ...rest) {
    if (event === "request") {
      const [req, res] = rest;
      const entry = keep({ s: now(), q: `IN ${req.method} ${req.url}`, tag: "in" });
      res.on("finish", () => (entry.e = now()));
    }
    return emit.call(this, event, ...rest);
  };
  const file = path.join(process.cwd(), "bench", "results", `trace-${process.pid}.json`);
  setInterval(() => fs.writeFileSync(file, JSON.stringify(entries)), 1000).unref();
}

function analyse(file) {
  const entries = JSON.parse(fs.readFileSync(file, "utf8"));
  const median = (values) => values.slice().sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;
  const rows = { answer: [], reply: [], advance: [], commitToReply: [] };
  const posts = entries.flatMap((e, i) => (e.q.startsWith("IN POST /api/messaging/webhook") ? [i] : []));
  for (const at of posts.slice(0, 40)) {
    const start = entries[at].s;
    let lock;
    let committed;
    const calls = [];
    for (let i = at + 1; i < entries.length && entries[i].s - start < 200 && calls.length < 2; i++) {
      const e = entries[i];
      if (lock === undefined && e.q.startsWith("begin; select pg_advisory_xact_lock")) lock = e;
      else if (lock && committed === undefined && e.c === lock.c && e.q === "commit") committed = e.e;
      else if (committed !== undefined && e.tag === "http") calls.push(e.s);
    }
    if (entries[at].e === undefined || lock === undefined || committed === undefined || calls.length < 2)
      continue;
    // The read receipt's call goes first, the reply's second.
    rows.answer.push(entries[at].e - start);
    rows.reply.push(calls[1] - start);
    rows.advance.push(committed - lock.s);
    rows.commitToReply.push(calls[1] - committed);
  }
  console.log(`${rows.reply.length} deliveries, medians in ms (server side):`);
  for (const [name, values] of Object.entries(rows)) console.log(`  ${name}: ${median(values).toFixed(1)}`);
}

if (process.argv[1]?.endsWith("trace.mjs") && process.argv[2]) analyse(process.argv[2]);
else if (process.env.BENCH_TRACE && process.argv[1]?.endsWith(path.join("dist", "main.js"))) record();
