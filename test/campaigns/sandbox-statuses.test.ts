import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "../helpers/service.js";

// `npm run sandbox` answers a template send with the status webhooks a phone would cause:
// sent, delivered, then read (a text send: sent and delivered only).

const root = path.resolve(import.meta.dirname, "../..");
let child: ChildProcess | undefined;
const received: Array<{ status: string; id: string }> = [];
const receiver = createServer((request, response) => {
  let body = "";
  request.on("data", (c) => {
    body += c;
  });
  request.on("end", () => {
    const status = JSON.parse(body).entry[0].changes[0].value.statuses[0];
    received.push({ status: status.status, id: status.id });
    response.end("ok");
  });
});
afterAll(() => {
  child?.kill("SIGTERM");
  receiver.close();
});

describe("the sandbox's status webhooks", () => {
  it("reports a template send sent, delivered and read", async () => {
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    const port = await freePort();
    child = spawn(process.execPath, ["--import", "tsx", "src/upstream/sandbox/main.ts"], {
      cwd: root,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        SANDBOX_PORT: String(port),
        SANDBOX_WEBHOOK_URL: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`,
        SANDBOX_APP_SECRET: "secret",
      },
      stdio: "ignore",
    });
    const url = `http://127.0.0.1:${port}`;
    for (let i = 0; ; i++) {
      try {
        if ((await fetch(`${url}/_sandbox`)).ok) break;
      } catch {
        if (i > 300) throw new Error("the sandbox did not start");
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    const send = async (message: object) => {
      const response = await fetch(`${url}/v25.0/100000000000001/messages`, {
        method: "POST",
        headers: { authorization: "Bearer sandbox-token", "content-type": "application/json" },
        body: JSON.stringify({ messaging_product: "whatsapp", to: "15550001111", ...message }),
      });
      expect(response.status).toBe(200);
      return ((await response.json()) as { messages: Array<{ id: string }> }).messages[0]?.id as string;
    };
    const template = await send({
      type: "template",
      template: { name: "hello_world", language: { code: "en_US" } },
    });
    const text = await send({ type: "text", text: { body: "hi" } });
    await new Promise((r) => setTimeout(r, 3_500));
    expect(received.filter((r) => r.id === template).map((r) => r.status)).toEqual([
      "sent",
      "delivered",
      "read",
    ]);
    expect(received.filter((r) => r.id === text).map((r) => r.status)).toEqual(["sent", "delivered"]);
  }, 30_000);
});
