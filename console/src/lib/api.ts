import { setOnline } from "./connection";

/** An answer of the API other than 2xx: its status and `{ error, ... }` body. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly body: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = "HttpError";
  }

  /** The field an error names, among the given ones (the API starts messages with it). */
  fieldOf(fields: readonly string[]): string | undefined {
    return fields.find((f) => this.message.startsWith(`${f}:`) || this.message.startsWith(`${f} `));
  }
}

/** The request never got an answer (service down, network lost). */
export class NetworkError extends Error {
  constructor() {
    super("The service cannot be reached");
    this.name = "NetworkError";
  }
}

type Unauthorized = () => void;
let onUnauthorized: Unauthorized = () => {};

/** What to do when a session ends (the app sends the user to sign-in and back). */
export function setUnauthorizedHandler(handler: Unauthorized) {
  onUnauthorized = handler;
}

/** A request outside api() (the event stream) was answered 401: the session has ended. */
export function reportUnauthorized() {
  onUnauthorized();
}

export interface RequestOptions {
  method?: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  body?: unknown;
  form?: FormData;
  signal?: AbortSignal;
  /** Do not send the user to sign-in on 401 (the sign-in form itself). */
  allowUnauthorized?: boolean;
}

/** The one typed fetch of the console: same-origin cookie session, JSON in and out. */
export async function api<T>(path: string, options: RequestOptions = {}): Promise<T> {
  const headers: Record<string, string> = { accept: "application/json" };
  let body: BodyInit | undefined;
  if (options.form) body = options.form;
  else if (options.body !== undefined) {
    headers["content-type"] = "application/json";
    body = JSON.stringify(options.body);
  }
  let response: Response;
  try {
    response = await fetch(path, {
      method: options.method ?? (body ? "POST" : "GET"),
      headers,
      body,
      credentials: "same-origin",
      signal: options.signal,
    });
  } catch (error) {
    if ((error as Error).name === "AbortError") throw error;
    setOnline(false);
    throw new NetworkError();
  }
  // A proxy or a restarting instance answers 502/503 without the API's body: still offline.
  const text = await response.text();
  let parsed: unknown = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = null;
  }
  if ((response.status === 502 || response.status === 503) && parsed === null) {
    setOnline(false);
    throw new NetworkError();
  }
  setOnline(true);
  if (response.ok) return parsed as T;
  const errorBody = (parsed && typeof parsed === "object" ? parsed : {}) as Record<string, unknown>;
  const message =
    typeof errorBody.error === "string" ? errorBody.error : `Request failed (${response.status})`;
  if (response.status === 401 && !options.allowUnauthorized) onUnauthorized();
  throw new HttpError(response.status, message, errorBody);
}

export const errorText = (error: unknown) =>
  error instanceof Error ? error.message : "Something went wrong";

/** The list in a list answer `{ <key>: [...], next_cursor? }` (`canned_responses`, `api_keys`, `endpoints` …). */
export function listOf<T>(body: unknown, key: string): T[] {
  const named = body && typeof body === "object" ? (body as Record<string, unknown>)[key] : undefined;
  if (!Array.isArray(named)) throw new Error(`The service's answer has no ${key} list`);
  return named as T[];
}
