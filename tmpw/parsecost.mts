import { parse } from "csv-parse";
import { Readable } from "node:stream";
import { parserOptions } from "../src/contacts/import-rows.ts";
const N = 200_000;
let text = "Phone,Name,City,Tags\n";
for (let n = 0; n < N; n++) text += `+35191${String(n).padStart(7, "0")},"Customer ${n}",Porto,${n % 3 === 0 ? "vip" : "lead"}\n`;
const bytes = Buffer.from(text);
const pieces = [] as Buffer[];
for (let o = 0; o < bytes.length; o += 1 << 20) pieces.push(bytes.subarray(o, o + (1 << 20)));
for (let round = 0; round < 3; round++) {
  let t = performance.now(); let k = 0;
  const p = Readable.from(pieces, { highWaterMark: 1 }).pipe(parse(parserOptions(",")));
  for await (const r of p) k++;
  const a = ((performance.now() - t) * 1000) / N;
  t = performance.now(); k = 0;
  await new Promise<void>((res) => { const q = parse(parserOptions(",")); q.on("data", () => k++); q.on("end", res); for (const pc of pieces) q.write(pc); q.end(); });
  const b = ((performance.now() - t) * 1000) / N;
  console.log(`for-await ${a.toFixed(2)} us/row, on-data ${b.toFixed(2)} us/row`);
}
