/**
 * The import's parsing thread (started by runImport): reads the file's pieces
 * from the job, parses them with csv-parse, checks every record and hands over
 * batches of rows ready for COPY. It builds the next batch while the job
 * writes the previous one, and holds at most one finished batch: a batch is
 * handed over only when the job has asked for one ("next"), and a piece of
 * the file is asked for ("want") only when the parser needs it.
 *
 * Messages in: { type: "piece", bytes } | { type: "end" } | { type: "next" }.
 * Messages out: { type: "want" } | { type: "batch", batch, final } | { type: "failed", reason }.
 */
import { Readable } from "node:stream";
import { parentPort, workerData } from "node:worker_threads";
import { parse } from "csv-parse";
import { type Batch, BatchBuilder, parserOptions, type RowPlan } from "./import-rows.js";

export interface ParseJob {
  delimiter: string;
  /** Contact field to CSV column. */
  mapping: Record<string, string>;
  plan: Omit<RowPlan, "index">;
  update: boolean;
  /** Records already written by an earlier run of the job (after a crash). */
  skipUntil: number;
  batchSize: number;
}

export type ToParser = { type: "piece"; bytes: Uint8Array } | { type: "end" } | { type: "next" };
export type FromParser =
  | { type: "want" }
  | { type: "batch"; batch: Batch; final: boolean }
  | { type: "failed"; reason: string };

const port = parentPort!;
const job = workerData as ParseJob;
const post = (message: FromParser, transfer?: ArrayBuffer[]) => port.postMessage(message, transfer);

let credits = 0;
let onCredit: (() => void) | null = null;
let onPiece: ((message: ToParser) => void) | null = null;
port.on("message", (message: ToParser) => {
  if (message.type === "next") {
    credits += 1;
    onCredit?.();
  } else onPiece?.(message);
});

async function* pieces() {
  for (;;) {
    const message = await new Promise<ToParser>((resolve) => {
      onPiece = resolve;
      post({ type: "want" });
    });
    if (message.type !== "piece") return;
    yield Buffer.from(message.bytes.buffer, message.bytes.byteOffset, message.bytes.byteLength);
  }
}

async function handOver(batch: Batch, final: boolean) {
  while (credits === 0) await new Promise<void>((resolve) => (onCredit = resolve));
  credits -= 1;
  post({ type: "batch", batch, final }, [batch.copy.buffer as ArrayBuffer]);
}

class Refusal extends Error {}

async function run() {
  const parser = Readable.from(pieces(), { highWaterMark: 1 }).pipe(parse(parserOptions(job.delimiter)));
  const builder = new BatchBuilder(job.update);
  let plan: RowPlan | null = null;
  let recordNo = 0;
  try {
    for await (const record of parser as AsyncIterable<string[]>) {
      if (!plan) {
        const header = record.map((c) => c.trim());
        const index: Record<string, number> = {};
        for (const [field, column] of Object.entries(job.mapping)) {
          const at = header.indexOf(column);
          if (at < 0) throw new Refusal(`the file has no column "${column}"`);
          index[field] = at;
        }
        plan = { ...job.plan, index };
        continue;
      }
      recordNo += 1;
      if (recordNo <= job.skipUntil) continue;
      // The spreadsheet's row number: the header is row 1.
      builder.add(recordNo + 1, record, plan);
      if (builder.records >= job.batchSize) await handOver(builder.take(), false);
    }
    await handOver(builder.take(), true);
  } catch (error) {
    parser.destroy();
    const message = (error as Error).message ?? String(error);
    post({ type: "failed", reason: error instanceof Refusal ? message : `row ${recordNo + 1}: ${message}` });
  }
}

void run();
