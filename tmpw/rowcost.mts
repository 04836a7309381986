import { parse } from "csv-parse";
import { Readable } from "node:stream";
import { BatchBuilder, parserOptions, type RowPlan } from "../src/contacts/import-rows.ts";
import { normalisePhone } from "../src/contacts/phone.ts";
const N = 200_000;
const cities = ["Lisbon", "Porto", "London", "Leeds", "Faro"];
let text = "Phone,Name,City,Tags\n";
for (let n = 0; n < N; n++) text += `+35191${String(n).padStart(7, "0")},"Customer ${n}",${cities[n % 5]},${n % 3 === 0 ? "vip" : "lead"}\n`;
const bytes = Buffer.from(text);
const pieces = [] as Buffer[];
for (let o = 0; o < bytes.length; o += 1 << 20) pieces.push(bytes.subarray(o, o + (1 << 20)));
async function records(cb: (r: string[]) => void) {
  const p = Readable.from(pieces, { highWaterMark: 1 }).pipe(parse(parserOptions(",")));
  for await (const r of p as AsyncIterable<string[]>) cb(r);
}
const plan: RowPlan = { index: { phone: 0, name: 1, "attributes.city": 2, tags: 3 }, definitions: new Map(), defaultCountry: null, addTags: [] };
for (let round = 0; round < 2; round++) {
  let t = performance.now();
  let k = 0; await records(() => k++);
  const parseUs = ((performance.now() - t) * 1000) / N;
  t = performance.now();
  for (let n = 0; n < N; n++) normalisePhone(`+35191${String(n).padStart(7, "0")}`, null);
  const phoneUs = ((performance.now() - t) * 1000) / N;
  t = performance.now();
  const b = new BatchBuilder(false); let first = true; let row = 0;
  await records((r) => { if (first) { first = false; return; } b.add(++row, r, plan); if (b.records >= 10000) b.take(); });
  b.take();
  const allUs = ((performance.now() - t) * 1000) / N;
  console.log(`parse ${parseUs.toFixed(2)} us/row, phone ${phoneUs.toFixed(2)} us/row, parse+check+COPY text ${allUs.toFixed(2)} us/row`);
}
