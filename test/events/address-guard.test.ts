import type { LookupAddress } from "node:dns";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import {
  checkWebhookUrl,
  isPublicAddress,
  type Resolve,
  specialRangeOf,
} from "../../src/events/address-guard.js";
import { postWebhook } from "../../src/events/post.js";

const resolver =
  (table: Record<string, string[]>): Resolve =>
  async (host) => {
    const addresses = table[host];
    if (!addresses) throw Object.assign(new Error("not found"), { code: "ENOTFOUND" });
    return addresses.map((address): LookupAddress => ({ address, family: address.includes(":") ? 6 : 4 }));
  };

describe("WEBHOOK_ALLOW_PRIVATE", () => {
  const env = { NODE_ENV: "test", ENCRYPTION_KEY: "a".repeat(64), AUTH_SECRET: "s".repeat(32) };
  it("is off unless set to true", () => {
    expect(loadConfig(env).webhookAllowPrivate).toBe(false);
    expect(loadConfig({ ...env, WEBHOOK_ALLOW_PRIVATE: "false" }).webhookAllowPrivate).toBe(false);
    expect(loadConfig({ ...env, WEBHOOK_ALLOW_PRIVATE: "true" }).webhookAllowPrivate).toBe(true);
  });
  it("names the variable when the value is not true or false", () => {
    expect(() => loadConfig({ ...env, WEBHOOK_ALLOW_PRIVATE: "yes" })).toThrow(
      /^Invalid WEBHOOK_ALLOW_PRIVATE: /,
    );
  });
});

describe("isPublicAddress", () => {
  it.each([
    "127.0.0.1",
    "127.255.0.9",
    "10.0.0.1",
    "10.255.255.255",
    "172.16.0.1",
    "172.31.255.254",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "0.0.0.0",
    "224.0.0.1",
    "255.255.255.255",
    "::1",
    "::",
    "fc00::1",
    "fd12:3456::1",
    "fe80::1",
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "::ffff:169.254.169.254",
    "64:ff9b::a00:1",
    "2002:a00:1::",
    "ff02::1",
  ])("refuses %s", (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });

  it.each([
    "93.184.215.14",
    "8.8.8.8",
    "172.32.0.1",
    "192.169.0.1",
    "2606:4700::6810:84e5",
    "::ffff:8.8.8.8",
  ])("accepts %s", (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });
});

describe("every special range", () => {
  // One address per range, with the range the guard names in its error.
  it.each([
    ["0.0.0.0", "unspecified"],
    ["0.1.2.3", "unspecified"],
    ["255.255.255.255", "broadcast"],
    ["224.0.0.251", "multicast"],
    ["239.255.255.250", "multicast"],
    ["169.254.0.1", "linkLocal"],
    ["127.0.0.1", "loopback"],
    ["100.64.0.1", "carrierGradeNat"],
    ["100.127.255.254", "carrierGradeNat"],
    ["10.0.0.1", "private"],
    ["172.16.0.1", "private"],
    ["192.168.0.1", "private"],
    ["192.0.0.8", "reserved"],
    ["192.0.2.1", "reserved"],
    ["198.18.0.1", "reserved"],
    ["198.51.100.1", "reserved"],
    ["203.0.113.1", "reserved"],
    ["240.0.0.1", "reserved"],
    ["::", "unspecified"],
    ["::1", "loopback"],
    ["::7f00:1", "IPv4-compatible"],
    ["::a00:1", "IPv4-compatible"],
    ["::808:808", "IPv4-compatible"],
    ["::ffff:127.0.0.1", "IPv4-mapped loopback"],
    ["::ffff:7f00:1", "IPv4-mapped loopback"],
    ["::ffff:100.64.0.1", "IPv4-mapped carrierGradeNat"],
    ["64:ff9b::7f00:1", "rfc6052"],
    ["64:ff9b::808:808", "rfc6052"],
    ["64:ff9b:1::a00:1", "rfc6052"],
    ["2002:7f00:1::", "6to4"],
    ["2002:808:808::1", "6to4"],
    ["2001::1", "teredo"],
    ["2001:0:4136:e378:8000:63bf:3fff:fdd2", "teredo"],
    ["fec0::1", "deprecatedSiteLocal"],
    ["fc00::1", "uniqueLocal"],
    ["fdff::1", "uniqueLocal"],
    ["fe80::1", "linkLocal"],
    ["fe80::1%eth0", "scoped"],
    ["ff02::1", "multicast"],
    ["ff0e::1", "multicast"],
    ["2001:db8::1", "reserved"],
    ["100::1", "discard"],
    ["4000::1", "not global unicast"],
  ])("refuses %s (%s)", (address, range) => {
    expect(specialRangeOf(address)).toBe(range);
    expect(isPublicAddress(address)).toBe(false);
  });

  it.each(["8.8.8.8", "1.1.1.1", "::ffff:8.8.8.8", "2606:4700::6810:84e5", "2a00:1450:4001:80b::200e"])(
    "accepts the public address %s",
    (address) => {
      expect(specialRangeOf(address)).toBeNull();
    },
  );

  it.each([
    ["https://[::127.0.0.1]/", "IPv4-compatible"],
    ["https://[::ffff:127.0.0.1]/", "IPv4-mapped loopback"],
    ["https://[64:ff9b::7f00:1]/", "rfc6052"],
    ["https://[2002:7f00:1::]/", "6to4"],
    ["https://[2001::1]/", "teredo"],
    ["https://[fec0::1]/", "deprecatedSiteLocal"],
  ])("refuses the webhook URL %s", async (url, range) => {
    await expect(checkWebhookUrl(url, { allowPrivate: false })).rejects.toThrow(
      `must not point at a private or reserved address (${range})`,
    );
  });

  it.each([
    ["compat.example.com", "::7f00:1"],
    ["nat64.example.com", "64:ff9b::a9fe:a9fe"],
    ["sixtofour.example.com", "2002:a9fe:a9fe::"],
    ["teredo.example.com", "2001::1"],
    ["site.example.com", "fec0::1"],
  ])("refuses %s, which resolves to %s, when saved and when connecting", async (host, address) => {
    const resolve = resolver({ [host]: ["93.184.215.14", address] });
    await expect(checkWebhookUrl(`https://${host}/`, { allowPrivate: false, resolve })).rejects.toThrow(
      /resolves to a private or reserved address/,
    );
    const result = await postWebhook({
      url: `https://${host}/`,
      secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
      messageId: "msg_1",
      body: "{}",
      now: new Date(),
      timeoutMs: 2000,
      allowPrivate: false,
      resolve,
    });
    expect(result).toMatchObject({
      ok: false,
      status: null,
      error: expect.stringMatching(/private or reserved/),
    });
  });

  it("refuses a literal special address at connection time too", async () => {
    const result = await postWebhook({
      url: "https://[::7f00:1]:9/",
      secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
      messageId: "msg_1",
      body: "{}",
      now: new Date(),
      timeoutMs: 2000,
      allowPrivate: false,
    });
    expect(result).toMatchObject({ ok: false, status: null, error: "The URL is not allowed" });
  });
});

describe("checkWebhookUrl", () => {
  const resolve = resolver({
    "hooks.example.com": ["93.184.215.14", "2606:4700::6810:84e5"],
    "internal.example.com": ["10.1.2.3"],
    "mixed.example.com": ["93.184.215.14", "192.168.0.10"],
    "v6-local.example.com": ["fd00::5"],
    "mapped.example.com": ["::ffff:127.0.0.1"],
  });
  const check = (url: string) => checkWebhookUrl(url, { allowPrivate: false, resolve });

  it("accepts an https URL whose name resolves to public addresses only", async () => {
    await expect(check("https://hooks.example.com/wa?x=1")).resolves.toBe("https://hooks.example.com/wa?x=1");
    await expect(check("https://93.184.215.14/hook")).resolves.toBe("https://93.184.215.14/hook");
  });

  it.each([
    ["http://hooks.example.com/", /must be an https URL/],
    ["ftp://hooks.example.com/", /must be an https URL/],
    ["not a url", /absolute URL/],
    ["https://user:pass@hooks.example.com/", /credentials/],
    ["https://127.0.0.1/", /private or reserved/],
    ["https://2130706433/", /private or reserved/],
    ["https://0x7f.1/", /private or reserved/],
    ["https://10.0.0.8/", /private or reserved/],
    ["https://172.20.1.1/", /private or reserved/],
    ["https://192.168.0.1/", /private or reserved/],
    ["https://169.254.169.254/latest/meta-data", /private or reserved/],
    ["https://[::1]/", /private or reserved/],
    ["https://[fc00::1]/", /private or reserved/],
    ["https://[fe80::1]/", /private or reserved/],
    ["https://[::ffff:127.0.0.1]/", /private or reserved/],
    ["https://[::ffff:a00:1]/", /private or reserved/],
    ["https://internal.example.com/", /resolves to a private or reserved address/],
    ["https://mixed.example.com/", /resolves to a private or reserved address/],
    ["https://v6-local.example.com/", /resolves to a private or reserved address/],
    ["https://mapped.example.com/", /resolves to a private or reserved address/],
    ["https://nowhere.example.com/", /does not resolve/],
  ])("refuses %s", async (url, message) => {
    await expect(check(url)).rejects.toThrow(message);
  });

  it("resolves real names too: localhost is loopback", async () => {
    await expect(checkWebhookUrl("https://localhost/hook", { allowPrivate: false })).rejects.toThrow(
      /private or reserved/,
    );
  });

  it("with private addresses allowed, takes http and loopback", async () => {
    await expect(checkWebhookUrl("http://127.0.0.1:8080/x", { allowPrivate: true })).resolves.toBe(
      "http://127.0.0.1:8080/x",
    );
    await expect(checkWebhookUrl("ftp://127.0.0.1/", { allowPrivate: true })).rejects.toThrow(
      /http or https/,
    );
  });
});

describe("postWebhook", () => {
  let server: http.Server;
  let hits = 0;
  let port = 0;
  beforeAll(async () => {
    server = http.createServer((request, response) => {
      hits += 1;
      if (request.url === "/nul") {
        response.writeHead(200).end("a\u0000b");
        return;
      }
      if (request.url === "/redirect") {
        response.writeHead(302, { location: "/landing" }).end();
        return;
      }
      response.writeHead(200).end("ok");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const post = (url: string, allowPrivate: boolean, resolve?: Resolve) =>
    postWebhook({
      url,
      secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
      messageId: "msg_1",
      body: "{}",
      now: new Date(),
      timeoutMs: 2000,
      allowPrivate,
      resolve,
    });

  it("refuses at connection time a name that now resolves to a private address", async () => {
    const before = hits;
    const result = await post(
      `https://rebound.example.com:${port}/`,
      false,
      resolver({ "rebound.example.com": ["127.0.0.1"] }),
    );
    expect(result).toMatchObject({
      ok: false,
      status: null,
      error: expect.stringMatching(/private or reserved/),
    });
    expect(hits).toBe(before);
  });

  it("refuses a literal private address unless allowed", async () => {
    const before = hits;
    expect(await post(`https://127.0.0.1:${port}/`, false)).toMatchObject({ ok: false, status: null });
    expect(hits).toBe(before);
  });

  it("does not follow redirects", async () => {
    const before = hits;
    const result = await post(`http://127.0.0.1:${port}/redirect`, true);
    expect(result).toMatchObject({ ok: false, status: 302, error: "Redirects are not followed" });
    expect(hits).toBe(before + 1);
  });

  it("keeps the start of the answer, without NUL characters (they cannot be stored)", async () => {
    expect(await post(`http://127.0.0.1:${port}/nul`, true)).toMatchObject({
      ok: true,
      status: 200,
      body: "ab",
    });
  });

  it("reports a refused connection", async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const freePort = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    expect(await post(`http://127.0.0.1:${freePort}/`, true)).toMatchObject({
      ok: false,
      status: null,
      error: "Connection refused",
    });
  });
});
