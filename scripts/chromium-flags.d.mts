/** Flags for Debian's Chromium under playwright-core (see chromium-flags.mjs). */
export const CHROMIUM_FLAGS: string[];
