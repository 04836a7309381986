export const INBOX_JS_BUDGET_BYTES: number;
export function measureConsoleBundle(): {
  inboxJsGzipBytes: number;
  lazyJsGzipBytes: number;
  inboxFiles: string[];
  lazyFiles: string[];
};
