import { describe, expect, it } from "vitest";
import { ownOrigins } from "../../src/auth/origins.js";
import { ConfigError, loadConfig } from "../../src/config.js";

const base = { NODE_ENV: "test", ENCRYPTION_KEY: "0".repeat(64), AUTH_SECRET: "s".repeat(32) } as const;

describe("access settings", () => {
  it("defaults to 10 free failed sign-ins per email and address, 100 per address and 50 per email in 15 minutes", () => {
    const config = loadConfig({ ...base });
    expect(config.signInRateLimit).toEqual({ points: 10, durationSeconds: 900 });
    expect(config.signInIpRateLimit).toEqual({ points: 100, durationSeconds: 900 });
    expect(config.signInEmailRateLimit).toEqual({ points: 50, durationSeconds: 900 });
    expect(config.trustedOrigins).toEqual([]);
    expect(config.trustProxy).toBe(false);
  });

  it("reads the limits, trusted origins and proxy setting", () => {
    const config = loadConfig({
      ...base,
      SIGN_IN_RATE_LIMIT: "5/1h",
      SIGN_IN_IP_RATE_LIMIT: "50/10m",
      SIGN_IN_EMAIL_RATE_LIMIT: "20/1h",
      TRUSTED_ORIGINS: "http://localhost:5173/, https://console.example.com",
      TRUST_PROXY: "1",
    });
    expect(config.signInRateLimit).toEqual({ points: 5, durationSeconds: 3600 });
    expect(config.signInIpRateLimit).toEqual({ points: 50, durationSeconds: 600 });
    expect(config.signInEmailRateLimit).toEqual({ points: 20, durationSeconds: 3600 });
    expect(config.trustedOrigins).toEqual(["http://localhost:5173", "https://console.example.com"]);
    expect(config.trustProxy).toBe(1);
    expect(loadConfig({ ...base, TRUST_PROXY: "true" }).trustProxy).toBe(true);
    expect(loadConfig({ ...base, TRUST_PROXY: "10.0.0.0/8" }).trustProxy).toBe("10.0.0.0/8");
  });

  it.each([
    ["SIGN_IN_RATE_LIMIT", "ten"],
    ["SIGN_IN_IP_RATE_LIMIT", "0/60s"],
    ["SIGN_IN_EMAIL_RATE_LIMIT", "many"],
    ["TRUSTED_ORIGINS", "console.example.com"],
    ["TRUSTED_ORIGINS", "ftp://files.example.com"],
  ])("stops start-up naming %s for %j", (name, value) => {
    expect(() => loadConfig({ ...base, [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, [name]: value })).toThrow(name);
  });
});

describe("own origins", () => {
  const config = (publicUrl: string, env: "development" | "production" | "test" = "development") => ({
    publicUrl,
    env,
    trustedOrigins: ["http://localhost:5173"],
  });

  it("counts PUBLIC_URL and its loopback twin outside production, plus TRUSTED_ORIGINS", () => {
    expect(ownOrigins(config("http://127.0.0.1:3000"))).toEqual([
      "http://127.0.0.1:3000",
      "http://localhost:3000",
      "http://localhost:5173",
    ]);
    expect(ownOrigins(config("http://localhost:8080/app"))).toContain("http://127.0.0.1:8080");
  });

  it("has no twin in production, nor for a real host name", () => {
    expect(ownOrigins(config("http://127.0.0.1:3000", "production"))).toEqual([
      "http://127.0.0.1:3000",
      "http://localhost:5173",
    ]);
    expect(ownOrigins(config("https://inbox.example.com"))).toEqual([
      "https://inbox.example.com",
      "http://localhost:5173",
    ]);
  });
});
