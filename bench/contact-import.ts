/**
 * The contact import against a bare COPY of the same file, in the same run:
 * a CSV of `rows` customers (phone, name, city, tags) is written, COPYed into
 * a plain table of text columns (the database's own fastest load), then
 * imported through the API (upload, job, every row checked and written) while
 * the service's RSS is sampled.
 */
import { once } from "node:events";
import { createWriteStream } from "node:fs";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { finished } from "node:stream/promises";
import pg from "pg";

export interface ContactImportResults {
  rows: number;
  fileMb: number;
  copySeconds: number;
  importSeconds: number;
  rowsPerSecond: number;
  copyRowsPerSecond: number;
  ratio: number;
  /**
   * A bare COPY of the same rows, shaped as contacts, into a table made like
   * contacts (its columns, defaults, indexes and foreign key): what loading
   * this file costs the database where the import must put it, with no check.
   */
  contactsCopySeconds: number;
  contactsCopyRowsPerSecond: number;
  /** The import against that COPY. */
  contactsRatio: number;
  /** The same rows inserted into contacts by one SQL statement from the COPYed table (rolled back). */
  sqlInsertSeconds: number | null;
  peakRssMb: number;
  /** The service's RSS before the upload, and its peak while the upload was answered. */
  idleRssMb: number;
  uploadPeakRssMb: number;
  uploadSeconds: number;
  created: number;
  errors: number;
}

export async function runContactImportBench(i: {
  api: string;
  databaseUrl: string;
  token: string;
  rows: number;
  servicePid: number;
  /** Also time the SQL-alone insert (minutes on a busy machine). */
  floor: boolean;
  rssOf: (pid: number) => number;
  log: (m: string) => void;
}): Promise<ContactImportResults> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "wa-import-bench-"));
  await fs.chmod(dir, 0o755);
  const file = path.join(dir, "contacts.csv");
  // The same rows as contacts rows (account, wa_id, phone, name, tags, attributes), for the COPY
  // into a table made like contacts.
  const shaped = path.join(dir, "contacts-shaped.csv");
  const db = new pg.Client({ connectionString: i.databaseUrl });
  await db.connect();
  try {
    const { rows: owner } = await db.query<{ id: string }>(
      "insert into accounts (name) values ('bench contacts copy') returning id",
    );
    const out = createWriteStream(file);
    const outShaped = createWriteStream(shaped);
    out.write("Phone,Name,City,Tags\n");
    const cities = ["Lisbon", "Porto", "London", "Leeds", "Faro"];
    let chunk = "";
    let chunkShaped = "";
    for (let n = 0; n < i.rows; n++) {
      // Portuguese mobile numbers +351 91x xxx xxx: distinct and valid.
      const phone = `+35191${String(n).padStart(7, "0")}`;
      const tag = n % 3 === 0 ? "vip" : "lead";
      chunk += `${phone},"Customer ${n}",${cities[n % 5]},${tag}\n`;
      chunkShaped += `${owner[0]!.id},${phone.slice(1)},${phone.slice(1)},"Customer ${n}",{${tag}},"{""city"": ""${cities[n % 5]}""}"\n`;
      if (chunk.length > 1 << 20) {
        // Both waits are listening before either is awaited: a stream that drains while the
        // other is waited for would otherwise never be heard, and the bench would hang.
        const drained: Promise<unknown>[] = [];
        if (!out.write(chunk)) drained.push(once(out, "drain"));
        if (!outShaped.write(chunkShaped)) drained.push(once(outShaped, "drain"));
        await Promise.all(drained);
        chunk = "";
        chunkShaped = "";
      }
    }
    out.end(chunk);
    outShaped.end(chunkShaped);
    await Promise.all([finished(out), finished(outShaped)]);
    await fs.chmod(file, 0o644);
    await fs.chmod(shaped, 0o644);
    const fileMb = (await fs.stat(file)).size / 2 ** 20;
    i.log(`contact import: ${i.rows.toLocaleString("en")} rows, ${fileMb.toFixed(1)} MB`);

    // The reference: COPY of the same file into a plain table.
    await db.query(
      "drop table if exists bench_copy; create unlogged table bench_copy (phone text, name text, city text, tags text)",
    );
    await db.query("alter table bench_copy set logged");
    const copyStarted = performance.now();
    await db.query(`copy bench_copy from '${file}' with (format csv, header true)`);
    const copySeconds = (performance.now() - copyStarted) / 1000;
    // The database's own floor for these rows in contacts (its indexes, its foreign key): one
    // set-based INSERT ... SELECT of the COPYed rows, no checks, rolled back.
    let sqlInsertSeconds: number | null = null;
    if (i.floor) {
      await db.query("begin");
      const { rows: account } = await db.query<{ id: string }>(
        "insert into accounts (name) values ('bench sql insert') returning id",
      );
      const sqlStarted = performance.now();
      await db.query(
        `insert into contacts (account_id, wa_id, phone, name, tags, attributes)
         select $1, substr(phone, 2), substr(phone, 2), name, array[tags], jsonb_build_object('city', city)
           from bench_copy`,
        [account[0]!.id],
      );
      sqlInsertSeconds = (performance.now() - sqlStarted) / 1000;
      await db.query("rollback");
    }
    // The same rows as contacts rows, COPYed into a table made like contacts (a fresh one: the
    // real table keeps dead index entries after a rollback, which would slow what follows).
    await db.query(
      `drop table if exists bench_contacts;
       create table bench_contacts (like contacts including all);
       alter table bench_contacts add foreign key (account_id) references accounts (id) on delete cascade`,
    );
    await db.query("drop table bench_copy");
    await db.query("checkpoint");
    const contactsCopyStarted = performance.now();
    await db.query(
      `copy bench_contacts (account_id, wa_id, phone, name, tags, attributes) from '${shaped}' with (format csv)`,
    );
    const contactsCopySeconds = (performance.now() - contactsCopyStarted) / 1000;
    await db.query("drop table bench_contacts");
    await db.query("delete from accounts where id = $1", [owner[0]!.id]);
    await db.query("checkpoint");
    i.log(
      `contact import: a bare COPY of the same rows into a table made like contacts (its indexes and foreign key): ${contactsCopySeconds.toFixed(1)} s (${Math.round(i.rows / contactsCopySeconds).toLocaleString("en")} rows/s)`,
    );

    // The import, through the API.
    const idleRssMb = i.rssOf(i.servicePid);
    let peak = idleRssMb;
    const sampler = setInterval(() => {
      peak = Math.max(peak, i.rssOf(i.servicePid));
    }, 100);
    const started = performance.now();
    const form = new FormData();
    form.set("file", new Blob([await fs.readFile(file)], { type: "text/csv" }), "contacts.csv");
    form.set(
      "mapping",
      JSON.stringify({ phone: "Phone", name: "Name", tags: "Tags", "attributes.city": "City" }),
    );
    form.set("on_duplicate", "skip");
    const answer = await fetch(`${i.api}/api/contacts/imports`, {
      method: "POST",
      headers: { authorization: `Bearer ${i.token}` },
      body: form,
    });
    if (answer.status !== 202) throw new Error(`import refused: ${answer.status} ${await answer.text()}`);
    const uploadSeconds = (performance.now() - started) / 1000;
    const uploadPeakRssMb = Math.max(peak, i.rssOf(i.servicePid));
    const { import: created } = (await answer.json()) as { import: { id: string } };
    let state: Record<string, number | string> = {};
    for (;;) {
      await new Promise((r) => setTimeout(r, 250));
      const read = await fetch(`${i.api}/api/contacts/imports/${created.id}`, {
        headers: { authorization: `Bearer ${i.token}` },
      });
      state = ((await read.json()) as { import: Record<string, number | string> }).import;
      if (state.status === "completed" || state.status === "failed") break;
    }
    const importSeconds = (performance.now() - started) / 1000;
    clearInterval(sampler);
    if (state.status !== "completed") throw new Error(`import ${state.status}: ${state.failure}`);
    const results: ContactImportResults = {
      rows: i.rows,
      fileMb,
      copySeconds,
      importSeconds,
      rowsPerSecond: i.rows / importSeconds,
      copyRowsPerSecond: i.rows / copySeconds,
      ratio: copySeconds / importSeconds,
      contactsCopySeconds,
      contactsCopyRowsPerSecond: i.rows / contactsCopySeconds,
      contactsRatio: contactsCopySeconds / importSeconds,
      sqlInsertSeconds,
      peakRssMb: peak,
      idleRssMb,
      uploadPeakRssMb,
      uploadSeconds,
      created: Number(state.created),
      errors: Number(state.errors),
    };
    i.log(
      `contact import: ${Math.round(results.rowsPerSecond).toLocaleString("en")} rows/s (${importSeconds.toFixed(1)} s, ${results.created.toLocaleString("en")} created, ${results.errors} errors) vs COPY ${Math.round(results.copyRowsPerSecond).toLocaleString("en")} rows/s (${copySeconds.toFixed(1)} s): ${results.ratio.toFixed(3)} x; vs COPY into a table like contacts: ${results.contactsRatio.toFixed(2)} x; service peak RSS ${peak.toFixed(0)} MB`,
    );
    i.log(
      `contact import: ${sqlInsertSeconds === null ? "" : `the same rows by one INSERT ... SELECT into contacts in SQL alone: ${sqlInsertSeconds.toFixed(1)} s (${Math.round(i.rows / sqlInsertSeconds).toLocaleString("en")} rows/s, ${(copySeconds / sqlInsertSeconds).toFixed(2)} x COPY); `}service RSS ${idleRssMb.toFixed(0)} MB before the upload, ${uploadPeakRssMb.toFixed(0)} MB peak until it was answered (${uploadSeconds.toFixed(1)} s)`,
    );
    return results;
  } finally {
    await db.end();
    await fs.rm(dir, { recursive: true, force: true });
  }
}
