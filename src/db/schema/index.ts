export * from "./auth.js";
export * from "./flows.js";
export * from "./inbox.js";
export * from "./jobs.js";
export * from "./messaging.js";
export * from "./tenancy.js";
