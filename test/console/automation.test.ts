import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { insertChannelConfig } from "../helpers/fixtures.js";
import {
  ensureConsoleBuilt,
  findChromium,
  launchBrowser,
  NUMBER,
  newPage,
  type Stack,
  startStack,
} from "./browser.js";

const chromiumFound = findChromium();
if ("missing" in chromiumFound) console.log(chromiumFound.missing);

/** The inbox's pause / resume of a conversation's bot, and the Automation settings page. */
describe.skipIf("missing" in chromiumFound)(
  "pausing and resuming the bot in the console",
  { timeout: 180_000 },
  () => {
    let stack: Stack;
    let browser: Browser;
    let page: Page;
    const email = `ari-${Date.now()}@example.com`;
    const password = "correct horse battery";

    beforeAll(async () => {
      await ensureConsoleBuilt();
      stack = await startStack();
      browser = await launchBrowser((chromiumFound as { path: string }).path);
      const opened = await newPage(browser);
      page = opened.page;
      const request = opened.context.request;
      const headers = { origin: stack.url };
      expect(
        (
          await request.post(`${stack.url}/api/auth/sign-up/email`, {
            data: { email, password, name: "Ari Agent" },
            headers,
          })
        ).status(),
      ).toBe(200);
      const signIn = await request.post(`${stack.url}/api/auth/sign-in/email`, {
        data: { email, password },
        headers,
      });
      const userId = (await signIn.json()).user.id as string;
      const account = await request.post(`${stack.url}/api/accounts`, {
        data: { name: "Lumen Coffee" },
        headers,
      });
      const accountId = (await account.json()).account.id as string;
      await insertChannelConfig(stack.t, {
        accountId,
        userId,
        phoneNumberId: NUMBER.phoneNumberId,
        accessToken: NUMBER.accessToken,
      });
      const flow = await request.post(`${stack.url}/api/flows`, {
        data: { template_slug: "welcome_menu" },
        headers,
      });
      const flowId = (await flow.json()).flow.id as string;
      const activated = await request.post(`${stack.url}/api/flows/${flowId}/activate`, {
        data: { status: "active" },
        headers,
      });
      expect(activated.status()).toBe(200);
    }, 180_000);

    afterAll(async () => {
      await browser?.close();
      await stack?.close();
    });

    const menusTo = (waId: string) =>
      stack.accepted.filter((m) => m.to === waId && m.type === "interactive").length;

    it("pauses the bot of a conversation, so a keyword reaches the agent, and resumes it", async () => {
      const sam = stack.customer("15557654321", "Sam Customer");
      await sam.text("Good morning, a question about my order");
      await page.goto(`${stack.url}/inbox`);
      await page.getByRole("link", { name: /Sam Customer/ }).click();
      const bar = page.getByLabel("Automation");
      await bar.getByText("Bot active").waitFor();

      await bar.getByRole("button", { name: "Pause bot" }).click();
      await bar.getByText("Bot paused").waitFor();
      await bar.getByText(/paused by hand · until resumed/).waitFor();
      await sam.text("help");
      await page.getByRole("list", { name: "Messages" }).getByText("help", { exact: true }).waitFor();
      await stack.t.app.deps.jobs.drain();
      expect(menusTo("15557654321")).toBe(0);

      await bar.getByRole("button", { name: "Resume bot" }).click();
      await bar.getByText("Bot active").waitFor();
      await sam.text("help");
      await stack.t.app.deps.jobs.drain();
      await expect.poll(() => menusTo("15557654321"), { timeout: 20_000 }).toBe(1);
    });

    it("an agent's reply pauses the bot for the account's minutes, shown with its end", async () => {
      await page.getByLabel("Message", { exact: true }).fill("Hi Sam, Ari here.");
      await page.getByRole("button", { name: "Send" }).click();
      const bar = page.getByLabel("Automation");
      await bar.getByText(/an agent replied · until/).waitFor();
    });

    it("sets business hours, auto-assignment and the pause minutes on the Automation settings page", async () => {
      await page.goto(`${stack.url}/settings/automation`);
      await page.getByRole("heading", { name: "Business hours" }).waitFor();
      await page.getByLabel("Timezone").fill("Mars/Olympus");
      await page.getByRole("button", { name: "Save business hours" }).click();
      await page.getByText(/timezone: unknown timezone/).waitFor();
      await page.getByLabel("Timezone").fill("Europe/Lisbon");
      await page.getByLabel("Away message").fill("We are closed; back at 9.");
      await page.getByRole("button", { name: "Save business hours" }).click();
      await page.getByText(/^(Open|Closed) now\.$/).waitFor();

      await page.getByLabel("Pause the bot after an agent's message (minutes)").fill("10");
      await page.getByLabel("Auto-assignment").selectOption("least_busy");
      await page.getByLabel("Most open conversations per member").fill("4");
      await page.getByRole("button", { name: "Save", exact: true }).click();
      await page.getByText("Saved.").first().waitFor();
      const settings = await page.context().request.get(`${stack.url}/api/settings`);
      expect((await settings.json()).settings).toMatchObject({
        agent_reply_pause_minutes: 10,
        auto_assign: { mode: "least_busy", max_open_per_agent: 4 },
      });
      const hours = await page.context().request.get(`${stack.url}/api/settings/business-hours`);
      expect((await hours.json()).business_hours).toMatchObject({
        timezone: "Europe/Lisbon",
        away_message: "We are closed; back at 9.",
        weekly: { mon: [["09:00", "17:00"]], sat: [] },
      });
    });
  },
);
