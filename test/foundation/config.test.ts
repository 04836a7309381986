import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";

const made: string[] = [];
const tmp = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "wa-config-"));
  made.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of made) fs.rmSync(dir, { recursive: true, force: true });
});
const quiet = () => {};

describe("configuration", () => {
  it("applies the documented defaults", () => {
    const config = loadConfig({ DATA_DIR: tmp() }, quiet);
    expect(config).toMatchObject({
      port: 3000,
      host: "127.0.0.1",
      databaseUrl: undefined,
      graphApiUrl: "https://graph.facebook.com",
      graphApiVersion: "v25.0",
      appSecret: undefined,
      redisUrl: undefined,
      reactRateLimit: { points: 120, durationSeconds: 60 },
      logLevel: "info",
    });
  });

  it("generates development secrets once, keeps them in DATA_DIR and warns", () => {
    const dir = tmp();
    const warnings: string[] = [];
    const first = loadConfig({ DATA_DIR: dir }, (m) => warnings.push(m));
    const second = loadConfig({ DATA_DIR: dir }, (m) => warnings.push(m));
    expect(first.encryptionKey).toMatch(/^[0-9a-f]{64}$/);
    expect(second.encryptionKey).toBe(first.encryptionKey);
    expect(second.authSecret).toBe(first.authSecret);
    expect(warnings).toHaveLength(2);
    expect(warnings.join("\n")).not.toContain(first.encryptionKey);
    const mode = fs.statSync(path.join(dir, "secrets", "encryption_key")).mode & 0o777;
    expect(mode).toBe(0o600);
  });

  it.each(["ENCRYPTION_KEY", "AUTH_SECRET"])("stops start-up in production when %s is missing", (name) => {
    const env: Record<string, string> = {
      NODE_ENV: "production",
      DATA_DIR: tmp(),
      ENCRYPTION_KEY: "a".repeat(64),
      AUTH_SECRET: "s".repeat(40),
    };
    delete env[name];
    expect(() => loadConfig(env, quiet)).toThrow(new RegExp(name));
  });

  it.each([
    ["PORT", "not-a-port"],
    ["PORT", "70000"],
    ["DATABASE_URL", "mysql://x"],
    ["META_GRAPH_API_URL", "not a url"],
    ["META_GRAPH_API_VERSION", "25"],
    ["REDIS_URL", "http://localhost"],
    ["REACT_RATE_LIMIT", "lots"],
    ["LOG_LEVEL", "loud"],
    ["AUTH_SECRET", "short"],
  ])("stops start-up naming %s when it is %s", (name, value) => {
    expect(() => loadConfig({ DATA_DIR: tmp(), [name]: value }, quiet)).toThrow(ConfigError);
    expect(() => loadConfig({ DATA_DIR: tmp(), [name]: value }, quiet)).toThrow(
      new RegExp(`^Invalid ${name}`),
    );
  });

  it("accepts an invalid ENCRYPTION_KEY at start-up (saving a configuration reports it later)", () => {
    expect(loadConfig({ DATA_DIR: tmp(), ENCRYPTION_KEY: "nope" }, quiet).encryptionKey).toBe("nope");
  });

  it("parses REACT_RATE_LIMIT windows in seconds, minutes and hours", () => {
    const at = (v: string) => loadConfig({ DATA_DIR: tmp(), REACT_RATE_LIMIT: v }, quiet).reactRateLimit;
    expect(at("10/30s")).toEqual({ points: 10, durationSeconds: 30 });
    expect(at("5/2m")).toEqual({ points: 5, durationSeconds: 120 });
    expect(at("1000/1h")).toEqual({ points: 1000, durationSeconds: 3600 });
  });
});
