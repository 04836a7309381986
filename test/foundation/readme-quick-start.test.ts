/**
 * The README's Quick start, run as a new user pastes it: its second shell block (sign up, sign in,
 * keep the session token, create an account, read /api/me) through bash and curl against the
 * service on a real port. What it prints is what the user sees: one token, the new account, and
 * the caller's profile in it.
 */
import { execFile, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../helpers/harness.js";

const root = path.resolve(import.meta.dirname, "../..");
const curlFound = spawnSync("curl", ["--version"]).status === 0;
if (!curlFound) console.log("SKIPPED the README's Quick start commands: curl is not installed");

/** The shell block that follows "Then, in another terminal:" in the README's Quick start. */
function quickStartCommands(): string {
  const readme = readFileSync(path.join(root, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("## Quick start"));
  const after = section.slice(section.indexOf("Then, in another terminal:"));
  const block = /```sh\n([\s\S]*?)```/.exec(after);
  if (!block?.[1]) throw new Error("README: no shell block after 'Then, in another terminal:'");
  return block[1];
}

describe.skipIf(!curlFound)("the README's Quick start, pasted into a shell", () => {
  let t: TestApp;
  let port = 0;
  beforeAll(async () => {
    t = await createTestApp();
    await t.app.listen({ port: 0, host: "127.0.0.1" });
    port = (t.app.server.address() as AddressInfo).port;
  });
  afterAll(() => t.close());

  it("prints one session token, creates the account, and /api/me shows the owner in it", async () => {
    const commands = quickStartCommands();
    expect(commands).toContain("localhost:3000");
    // The service answers from this process: the shell runs beside it, never blocking it.
    const { stdout: output } = await promisify(execFile)(
      "bash",
      ["--norc", "--noprofile", "-e", "-c", commands.replaceAll("localhost:3000", `127.0.0.1:${port}`)],
      { encoding: "utf8", env: { PATH: process.env.PATH ?? "/usr/bin:/bin" }, timeout: 30_000 },
    );
    // sign-up's answer, the token alone on its line, the account, /api/me
    const lines = output.split("\n").filter(Boolean);
    const signUp = JSON.parse(lines[0] ?? "");
    expect(signUp.user).toMatchObject({ email: "ann@example.com", name: "Ann" });
    const token = lines[1] ?? "";
    expect(token).toMatch(/^[A-Za-z0-9._~+/=-]{20,}$/);
    const account = JSON.parse(lines[2] ?? "");
    expect(account.account).toMatchObject({ name: "Ann Shop" });
    const me = JSON.parse(lines[3] ?? "");
    expect(me.user.email).toBe("ann@example.com");
    expect(me.profile).toMatchObject({ role: "owner", account_id: account.account.id });
    expect(lines).toHaveLength(4);
  });
});
