/** Meta's error envelope: what the Graph API answers when it refuses a request. */
import { newFbtraceId } from "./ids.js";

export interface MetaError {
  status: number;
  code: number;
  message: string;
  type?: string;
  subcode?: number;
  details?: string;
}

export class GraphError extends Error {
  constructor(readonly meta: MetaError) {
    super(meta.message);
  }
}

/** The object does not exist, the token does not reach it, or it has no such edge. */
export function unsupported(method: string, id: string) {
  return new GraphError({
    status: 400,
    code: 100,
    subcode: 33,
    type: "GraphMethodException",
    message: `Unsupported ${method.toLowerCase()} request. Object with ID '${id}' does not exist, cannot be loaded due to missing permissions, or does not support this operation.`,
  });
}

export function invalidParameter(details: string) {
  return new GraphError({
    status: 400,
    code: 100,
    type: "OAuthException",
    message: "(#100) Invalid parameter",
    details,
  });
}

/** The JSON body of an error answer, with a fresh trace id. */
export function errorBody(e: MetaError) {
  return {
    error: {
      message: e.message,
      type: e.type ?? "OAuthException",
      code: e.code,
      ...(e.subcode === undefined ? {} : { error_subcode: e.subcode }),
      ...(e.details === undefined
        ? {}
        : { error_data: { messaging_product: "whatsapp", details: e.details } }),
      fbtrace_id: newFbtraceId(),
    },
  };
}
