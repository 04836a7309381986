import { eq, sql } from "drizzle-orm";
import { describe, expect } from "vitest";
import { contactImportFiles, contacts } from "../../src/db/schema/index.js";
import { appTest as it } from "../helpers/fixtures.js";
import { signUpWithAccount, type TestApp, type TestUser } from "../helpers/harness.js";
import { multipart } from "../media/multipart.js";

const csvFile = (text: string | Buffer, filename = "customers.csv") => ({
  name: "file",
  filename,
  type: "text/csv",
  bytes: Buffer.isBuffer(text) ? text : Buffer.from(text),
});

const post = (t: TestApp, user: TestUser, url: string, parts: Parameters<typeof multipart>[0]) => {
  const body = multipart(parts);
  return t.app.inject({
    method: "POST",
    url,
    payload: body.payload,
    headers: { ...user.headers, ...body.headers },
  });
};

const get = (t: TestApp, user: TestUser, url: string) => t.app.inject({ url, headers: user.headers });

async function importFile(
  t: TestApp,
  user: TestUser,
  text: string | Buffer,
  fields: Record<string, string>,
): Promise<Record<string, unknown>> {
  const started = await post(t, user, "/api/contacts/imports", [
    csvFile(text),
    ...Object.entries(fields).map(([name, value]) => ({ name, value })),
  ]);
  expect(started.statusCode, started.body).toBe(202);
  expect(started.json().import).toMatchObject({ status: "queued", processed_rows: 0 });
  await t.app.deps.jobs.drain({ timeoutMs: 60_000 });
  const read = await get(t, user, `/api/contacts/imports/${started.json().import.id}`);
  return read.json().import;
}

const contactsOf = (t: TestApp, accountId: string) =>
  t.database.db.select().from(contacts).where(eq(contacts.accountId, accountId)).orderBy(contacts.phone);

// Quoted fields with the delimiter, doubled quotes and a line break; a BOM; CRLF line ends; `;`.
const TRICKY =
  "\uFEFFTelefone;Nome;Cidade;Tags\r\n" +
  '+351 912 345 678;"Silva; Ana";"Porto";vip|lead\r\n' +
  '912345679;"João ""Jota"" Reis";Lisboa;\r\n' +
  '"+351 912 345 680";"Multi\r\nLine";Faro;lead\r\n' +
  "\r\n" +
  "not a phone;Nobody;Braga;\r\n";

describe("contact import", () => {
  it("previews a tricky CSV: columns, first rows and a suggested mapping", async ({ t, owner: { user } }) => {
    const preview = await post(t, user, "/api/contacts/imports/preview", [csvFile(TRICKY)]);
    expect(preview.statusCode, preview.body).toBe(200);
    expect(preview.json()).toEqual({
      columns: ["Telefone", "Nome", "Cidade", "Tags"],
      rows: [
        ["+351 912 345 678", "Silva; Ana", "Porto", "vip|lead"],
        ["912345679", 'João "Jota" Reis', "Lisboa", ""],
        ["+351 912 345 680", "Multi\r\nLine", "Faro", "lead"],
        ["not a phone", "Nobody", "Braga", ""],
      ],
      suggested_mapping: { phone: "Telefone", name: "Nome", "attributes.cidade": "Cidade", tags: "Tags" },
    });
  });

  it("imports it: national numbers in default_country, tags split and added, bad rows in errors.csv, progress events", async ({
    t,
    owner: { user, accountId },
  }) => {
    const result = await importFile(t, user, TRICKY, {
      mapping: JSON.stringify({ phone: "Telefone", name: "Nome", tags: "Tags", "attributes.city": "Cidade" }),
      default_country: "PT",
      add_tags: '["imported"]',
      opt_in_source: "shop signup",
    });
    expect(result).toMatchObject({
      status: "completed",
      total_rows: 4,
      processed_rows: 4,
      created: 3,
      updated: 0,
      skipped: 0,
      errors: 1,
    });
    const rows = await contactsOf(t, accountId);
    expect(rows.map((r) => [r.phone, r.name, r.tags, r.attributes, r.optInSource])).toEqual([
      ["351912345678", "Silva; Ana", ["vip", "lead", "imported"], { city: "Porto" }, "shop signup"],
      ["351912345679", 'João "Jota" Reis', ["imported"], { city: "Lisboa" }, "shop signup"],
      ["351912345680", "Multi\r\nLine", ["lead", "imported"], { city: "Faro" }, "shop signup"],
    ]);
    expect(rows.every((r) => r.optedInAt !== null)).toBe(true);
    const errors = await get(t, user, `/api/contacts/imports/${result.id}/errors.csv`);
    expect(errors.statusCode).toBe(200);
    expect(errors.headers["content-type"]).toMatch(/^text\/csv/);
    // The spreadsheet's row: the header is row 1, the multi-line record one row.
    expect(errors.body).toBe("row,value,reason\r\n5,not a phone,not a valid phone number\r\n");
    const { rows: events } = await t.database.db.execute<{ data: { status: string; created: number } }>(
      sql`select data from account_events where account_id = ${accountId} and type = 'contact_import.updated' order by seq`,
    );
    expect(events.at(0)?.data.status).toBe("queued");
    expect(events.at(-1)?.data).toMatchObject({ status: "completed", created: 3 });
    // The file is gone once read.
    expect(
      await t.database.db
        .select()
        .from(contactImportFiles)
        .where(eq(contactImportFiles.importId, result.id as string)),
    ).toEqual([]);
  });

  it("finds duplicates in the file and in the database: skip keeps what is there, update merges", async ({
    t,
    owner: { user, accountId },
  }) => {
    expect(
      (
        await t.app.inject({
          method: "POST",
          url: "/api/contacts",
          headers: user.headers,
          payload: { phone: "+14155550100", name: "Existing", tags: ["old"], attributes: { plan: "free" } },
        })
      ).statusCode,
    ).toBe(201);
    const file =
      "phone,name,plan\n" +
      "+1 415 555 0100,From file,pro\n" +
      "+1 415 555 0101,First,basic\n" +
      "+14155550101,Second,\n";
    const mapping = JSON.stringify({ phone: "phone", name: "name", "attributes.plan": "plan" });
    const skipped = await importFile(t, user, file, { mapping, on_duplicate: "skip" });
    expect(skipped).toMatchObject({ status: "completed", created: 1, updated: 0, skipped: 2, errors: 0 });
    let rows = await contactsOf(t, accountId);
    expect(rows.map((r) => [r.phone, r.name, r.attributes])).toEqual([
      ["14155550100", "Existing", { plan: "free" }],
      ["14155550101", "First", { plan: "basic" }],
    ]);
    const updated = await importFile(t, user, file, { mapping, on_duplicate: "update", add_tags: "new" });
    expect(updated).toMatchObject({ status: "completed", created: 0, updated: 3, skipped: 0 });
    rows = await contactsOf(t, accountId);
    expect(rows.map((r) => [r.phone, r.name, r.tags.sort(), r.attributes])).toEqual([
      ["14155550100", "From file", ["new", "old"], { plan: "pro" }],
      ["14155550101", "Second", ["new"], { plan: "basic" }],
    ]);
  });

  it("checks attributes against their types, row by row", async ({ t, owner: { user, accountId } }) => {
    await t.app.inject({
      method: "POST",
      url: "/api/contact-attributes",
      headers: user.headers,
      payload: { key: "age", label: "Age", type: "number" },
    });
    const result = await importFile(t, user, "phone,age\n+14155550110,33\n+14155550111,thirty\n", {
      mapping: JSON.stringify({ phone: "phone", "attributes.age": "age" }),
    });
    expect(result).toMatchObject({ created: 1, errors: 1 });
    const errors = await get(t, user, `/api/contacts/imports/${result.id}/errors.csv`);
    expect(errors.body).toBe("row,value,reason\r\n3,thirty,attributes.age: must be a number\r\n");
    expect((await contactsOf(t, accountId)).map((r) => r.attributes)).toEqual([{ age: "33" }]);
  });

  it.for([
    [
      "a PNG",
      [csvFile(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d]), "x.csv")],
      400,
      /not CSV/,
    ],
    [
      "Latin-1 text",
      [csvFile(Buffer.from([0x70, 0x68, 0x6f, 0x6e, 0x65, 0x0a, 0xe9, 0x0a]))],
      400,
      /not UTF-8/,
    ],
    ["an unclosed quote", [csvFile('phone,name\n+14155550100,"Ana\n')], 400, /not valid CSV/],
    ["no file", [{ name: "mapping", value: "{}" }], 400, /file is required/],
    ["no mapping", [csvFile("phone\n+14155550100\n")], 400, /^mapping: is required/],
    [
      "a mapping that is not JSON",
      [csvFile("phone\n1\n"), { name: "mapping", value: "{phone" }],
      400,
      /^mapping: not valid JSON/,
    ],
    [
      "a mapping naming a missing column",
      [csvFile("phone\n+14155550100\n"), { name: "mapping", value: '{"phone":"phone","name":"Name"}' }],
      400,
      /^mapping.name: the file has no column "Name"/,
    ],
    [
      "a mapping without phone",
      [csvFile("phone,name\n+14155550100,A\n"), { name: "mapping", value: '{"name":"name"}' }],
      400,
      /^mapping.phone: is required/,
    ],
    [
      "a mapping to an unknown field",
      [csvFile("phone\n+14155550100\n"), { name: "mapping", value: '{"phone":"phone","email":"phone"}' }],
      400,
      /^mapping.email: not a contact field/,
    ],
    [
      "a bad default_country",
      [
        csvFile("phone\n1\n"),
        { name: "mapping", value: '{"phone":"phone"}' },
        { name: "default_country", value: "XX" },
      ],
      400,
      /^default_country: /,
    ],
    [
      "a bad on_duplicate",
      [
        csvFile("phone\n1\n"),
        { name: "mapping", value: '{"phone":"phone"}' },
        { name: "on_duplicate", value: "merge" },
      ],
      400,
      /^on_duplicate: /,
    ],
    [
      "a file over 50 MB",
      [csvFile(Buffer.alloc(50 * 1024 * 1024 + 1, 0x31)), { name: "mapping", value: '{"phone":"phone"}' }],
      413,
      /50 MB/,
    ],
  ] as const)(
    "refuses %s with a clear error and imports nothing",
    async ([_name, parts, status, error], { t, owner: { user, accountId } }) => {
      const response = await post(t, user, "/api/contacts/imports", [...parts]);
      expect(response.statusCode).toBe(status);
      expect(response.json().error).toMatch(error);
      const { rows } = await t.database.db.execute(
        sql`select id from contact_imports where account_id = ${accountId}`,
      );
      expect(rows).toEqual([]);
      expect(await contactsOf(t, accountId)).toEqual([]);
    },
  );

  it("stops at a CSV error deep in the file: the batches before it stay, counted", async ({
    t,
    owner: { user, accountId },
  }) => {
    let file = "phone,name\n";
    for (let n = 0; n < 10_005; n++) file += `+35191${String(n).padStart(7, "0")},Customer ${n}\n`;
    file += '+351919999999,"Broken"quote\n+351919999998,After\n';
    const result = await importFile(t, user, file, { mapping: '{"phone":"phone","name":"name"}' });
    expect(result).toMatchObject({ status: "failed", processed_rows: 10_000, created: 10_000, errors: 0 });
    expect(result.failure).toMatch(/^row 10006: /);
    const { rows } = await t.database.db.execute<{ n: number }>(
      sql`select count(*)::int as n from contacts where account_id = ${accountId}`,
    );
    expect(rows[0]!.n).toBe(10_000);
  });

  it("takes a file larger than the part it keeps in memory: the preview and the check read its beginning, the count and the import the whole", async ({
    t,
    owner: { user, accountId },
  }) => {
    // Sixteen rows with a 62 KB note (a column left out of the mapping), then a quoted note with a
    // line break inside the first megabyte and its end beyond it, then 30,000 short rows: 2 MB.
    const long = "x".repeat(62_000);
    const note = `${"x".repeat(30_000)}\nstill the note${"y".repeat(30_000)}`;
    let file = "phone,name,note\n";
    let rows = 0;
    const row = (text: string) => `+35192${String(rows++).padStart(7, "0")},Customer ${rows},${text}\n`;
    for (let n = 0; n < 16; n++) file += row(long);
    file += `+351910000003,Third,"${note}"\n`;
    for (let n = 0; n < 30_000; n++) file += row("");
    const total = rows + 1;
    const preview = await post(t, user, "/api/contacts/imports/preview", [csvFile(file)]);
    expect(preview.statusCode, preview.body).toBe(200);
    expect(preview.json().columns).toEqual(["phone", "name", "note"]);
    expect(preview.json().rows).toHaveLength(10);
    expect(preview.json().rows.slice(0, 2)).toEqual([
      ["+351920000000", "Customer 1", long],
      ["+351920000001", "Customer 2", long],
    ]);
    const started = await post(t, user, "/api/contacts/imports", [
      csvFile(file),
      { name: "mapping", value: '{"phone":"phone","name":"name"}' },
    ]);
    expect(started.statusCode, started.body).toBe(202);
    // Counted as the file arrived: the progress bar has its total from the start.
    expect(started.json().import).toMatchObject({ status: "queued", total_rows: total });
    await t.app.deps.jobs.drain({ timeoutMs: 60_000 });
    const read = await get(t, user, `/api/contacts/imports/${started.json().import.id}`);
    expect(read.json().import, read.body).toMatchObject({
      status: "completed",
      total_rows: total,
      created: total,
    });
    const [third] = await t.database.db
      .select()
      .from(contacts)
      .where(sql`${contacts.accountId} = ${accountId} and ${contacts.phone} = '351910000003'`);
    expect(third?.name).toBe("Third");
  });

  it("answers 404 for another account's import", async ({ t, owner: a }) => {
    const b = await signUpWithAccount(t.app);
    const result = await importFile(t, a.user, "phone\n+14155550120\n", { mapping: '{"phone":"phone"}' });
    expect((await get(t, b.user, `/api/contacts/imports/${result.id}`)).statusCode).toBe(404);
    expect((await get(t, b.user, `/api/contacts/imports/${result.id}/errors.csv`)).statusCode).toBe(404);
  });
});
