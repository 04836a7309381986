// Flags for Debian's Chromium driven headless by playwright-core (the browser tests and the
// console benchmark): no sandbox as root, and nothing that reaches for the network by itself
// (this machine's network is closed; without them Chromium floods refused connections).
export const CHROMIUM_FLAGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-dev-shm-usage",
];
