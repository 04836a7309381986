/**
 * The import's parsing thread (started by runImport): reads the stored file's
 * pieces on a connection of its own, parses them with csv-parse, checks every
 * record and hands over batches of rows ready for COPY. It builds the next
 * batch while the job writes the previous one, and holds at most one finished
 * batch: a batch is handed over only when the job has asked for one ("next"),
 * and a piece of the file is read only when the parser needs it.
 *
 * The file is read here rather than by the job so that the driver's buffers
 * for it belong to this thread's heap, which collects often (it allocates
 * every record), and not to the service's, which may wait long enough between
 * collections to hold the whole file's worth.
 *
 * Messages in: { type: "next" }.
 * Messages out: { type: "batch", batch, final } | { type: "failed", reason }.
 */
import { parentPort, workerData } from "node:worker_threads";
import { parse } from "csv-parse";
import pg from "pg";
import { FILE_CHUNK, filePiece } from "./import-file.js";
import { type Batch, BatchBuilder, parserOptions, type RowPlan } from "./import-rows.js";

export interface ParseJob {
  /** The database's connection settings (the thread opens its own connection). */
  connection: pg.ClientConfig;
  importId: string;
  /** The stored file's size in bytes. */
  fileSize: number;
  delimiter: string;
  /** Contact field to CSV column. */
  mapping: Record<string, string>;
  plan: Omit<RowPlan, "index">;
  update: boolean;
  /** Records already written by an earlier run of the job (after a crash). */
  skipUntil: number;
  batchSize: number;
}

export type ToParser = { type: "next" };
export type FromParser = { type: "batch"; batch: Batch; final: boolean } | { type: "failed"; reason: string };

/** A batch is handed over at this many characters of records, however few they are. */
const BATCH_CHARACTERS = 4 * 1024 * 1024;

const port = parentPort!;
const job = workerData as ParseJob;
const post = (message: FromParser, transfer?: ArrayBuffer[]) => port.postMessage(message, transfer);

/** Batches the job has asked for and not yet received. */
let credits = 0;
/** A finished batch waiting for the job to ask (the parser is paused meanwhile). */
let waiting: { batch: Batch; final: boolean } | null = null;
let reading = false;
let fileEnded = false;
let stopped = false;

const client = new pg.Client(job.connection);
// A lost connection fails the read in progress (or the next one): the import stops there.
client.on("error", () => undefined);
const connected = client.connect();
connected.catch(() => undefined); // (awaited by the first read, which fails the import)
/** Where the next piece of the file starts. */
let offset = 0;

const parser = parse(parserOptions(job.delimiter));
const builder = new BatchBuilder(job.update);
let plan: RowPlan | null = null;
let recordNo = 0;

/** Why the import stops, held back while a finished batch before it waits to be handed over. */
let failAfter: string | null = null;

const fail = (reason: string) => {
  if (stopped) return;
  stopped = true;
  parser.destroy();
  client.end().catch(() => undefined);
  // The batches finished before the problem are written first (and counted).
  if (waiting && !waiting.final) failAfter = reason;
  else post({ type: "failed", reason });
};

const handOver = (batch: Batch, final: boolean) => {
  if (credits > 0) {
    credits -= 1;
    post({ type: "batch", batch, final }, [batch.copy.buffer as ArrayBuffer]);
  } else {
    waiting = { batch, final };
    parser.pause();
  }
};

/** A piece handed to the parser and not yet parsed. */
let parsing = false;

/** The next piece of the file, or null after the last. */
const nextPiece = async () => {
  await connected;
  if (offset >= job.fileSize) return null;
  const piece = await filePiece(client, job.importId, offset, FILE_CHUNK);
  offset += FILE_CHUNK;
  return piece;
};

/**
 * Reads the next piece of the file into the parser once it has parsed the
 * last one and every record of it has been taken (records the parser holds
 * while paused wait for the job: reading on would hold the file in memory).
 */
const askForMore = () => {
  if (reading || parsing || fileEnded || stopped || waiting || parser.readableLength > 0) return;
  reading = true;
  nextPiece().then(
    (piece) => {
      reading = false;
      if (stopped) return;
      if (piece === null) {
        fileEnded = true;
        parser.end();
        client.end().catch(() => undefined);
        return;
      }
      parsing = true;
      parser.write(piece, () => {
        parsing = false;
        askForMore();
      });
    },
    (error: Error) => {
      reading = false;
      fail(`the file could not be read: ${error.message}`);
    },
  );
};

parser.on("data", (record: string[]) => {
  if (stopped) return;
  if (!plan) {
    const header = record.map((c) => c.trim());
    const index: Record<string, number> = {};
    for (const [field, column] of Object.entries(job.mapping)) {
      const at = header.indexOf(column);
      if (at < 0) return fail(`the file has no column "${column}"`);
      index[field] = at;
    }
    plan = { ...job.plan, index };
    return;
  }
  recordNo += 1;
  if (recordNo <= job.skipUntil) return;
  // The spreadsheet's row number: the header is row 1.
  builder.add(recordNo + 1, record, plan);
  if (builder.records >= job.batchSize || builder.size >= BATCH_CHARACTERS) handOver(builder.take(), false);
  else if (!parsing && parser.readableLength === 0) askForMore();
});
parser.on("end", () => {
  if (!stopped) handOver(builder.take(), true);
});
// (Records parsed before the problem may still wait in the paused parser: they count.)
parser.on("error", (error: Error) => fail(`row ${recordNo + parser.readableLength + 1}: ${error.message}`));

port.on("message", (message: ToParser) => {
  if (failAfter && message.type === "next" && waiting) {
    post({ type: "batch", batch: waiting.batch, final: false }, [waiting.batch.copy.buffer as ArrayBuffer]);
    post({ type: "failed", reason: failAfter });
    waiting = null;
    failAfter = null;
  }
  if (stopped) return;
  if (message.type === "next") {
    credits += 1;
    if (waiting) {
      const { batch, final } = waiting;
      waiting = null;
      handOver(batch, final);
      if (!waiting) parser.resume();
    }
    askForMore();
  }
});
