import http from "node:http";
import https from "node:https";
import ipaddr from "ipaddr.js";
import { guardedLookup, isPublicAddress, type Resolve } from "./address-guard.js";
import { webhookHeaders } from "./signing.js";

export interface PostResult {
  ok: boolean;
  status: number | null;
  /** The start of the answer's body. */
  body: string | null;
  durationMs: number;
  error: string | null;
}

const KEEP_BODY_CHARS = 1024;
const READ_BODY_BYTES = 64 * 1024;

/**
 * POSTs one signed event. Delivered means a 2xx within the timeout; redirects
 * are answers like any other (never followed). Never throws: every failure
 * comes back as a result with its reason.
 */
export async function postWebhook(input: {
  url: string;
  secret: string;
  messageId: string;
  body: string;
  now: Date;
  timeoutMs: number;
  allowPrivate: boolean;
  resolve?: Resolve;
}): Promise<PostResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const url = new URL(input.url);
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  // Literal addresses never reach the lookup: check them here.
  if (
    !input.allowPrivate &&
    (url.protocol !== "https:" || (ipaddr.isValid(host) && !isPublicAddress(host)))
  ) {
    return { ok: false, status: null, body: null, durationMs: 0, error: "The URL is not allowed" };
  }
  const headers = {
    "content-type": "application/json",
    "content-length": String(Buffer.byteLength(input.body)),
    "user-agent": "wa-inbox-webhooks/1",
    ...webhookHeaders(input.secret, {
      id: input.messageId,
      timestamp: Math.floor(input.now.getTime() / 1000),
      body: input.body,
    }),
  };
  const client = url.protocol === "https:" ? https : http;

  return new Promise<PostResult>((resolve) => {
    let settled = false;
    const finish = (result: Omit<PostResult, "durationMs">) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ...result, durationMs: elapsed() });
    };
    const request = client.request(
      url,
      {
        method: "POST",
        headers,
        agent: false,
        lookup: guardedLookup(input.allowPrivate, input.resolve),
      },
      (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const done = () => {
          const status = response.statusCode ?? 0;
          const ok = status >= 200 && status < 300;
          // NUL cannot be stored in a text column.
          const text = Buffer.concat(chunks).toString("utf8").replaceAll("\0", "").slice(0, KEEP_BODY_CHARS);
          finish({
            ok,
            status,
            body: text || null,
            error: ok
              ? null
              : status >= 300 && status < 400
                ? "Redirects are not followed"
                : `HTTP ${status}`,
          });
          response.destroy();
        };
        response.on("data", (chunk: Buffer) => {
          size += chunk.length;
          if (size <= READ_BODY_BYTES) chunks.push(chunk);
          else done();
        });
        response.on("end", done);
        response.on("error", done);
      },
    );
    const timer = setTimeout(() => {
      finish({ ok: false, status: null, body: null, error: `No answer within ${input.timeoutMs} ms` });
      request.destroy();
    }, input.timeoutMs);
    request.on("error", (error: NodeJS.ErrnoException) => {
      finish({ ok: false, status: null, body: null, error: describeError(error) });
    });
    request.end(input.body);
  });
}

function describeError(error: NodeJS.ErrnoException): string {
  if (error.name === "UnsafeUrlError") return error.message;
  switch (error.code) {
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return "The host name does not resolve";
    case "ECONNREFUSED":
      return "Connection refused";
    case "ECONNRESET":
      return "Connection reset";
    case "ETIMEDOUT":
      return "Connection timed out";
    default:
      return error.code?.startsWith("ERR_TLS") || error.code?.includes("CERT")
        ? `TLS error: ${error.code}`
        : `Connection failed${error.code ? ` (${error.code})` : ""}`;
  }
}
