/** The one error type: thrown anywhere, written as `{ error }` by the app's error handler. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** Extra fields merged into the body next to `error`. */
    readonly extra?: Record<string, unknown>,
    /** Response headers to set. */
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

export const unauthorized = () => new ApiError(401, "Unauthorized");
export const notFound = (message = "Not found") => new ApiError(404, message);
