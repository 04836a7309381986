import type { APIRequestContext, Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  apiCall,
  ensureConsoleBuilt,
  findChromium,
  launchBrowser,
  NUMBER,
  newPage,
  type Stack,
  screenshot,
  startStack,
} from "./browser.js";

const chromiumFound = findChromium();
if ("missing" in chromiumFound) console.log(chromiumFound.missing);

describe.skipIf("missing" in chromiumFound)(
  "the contact side panel, the emoji picker, a long thread",
  { timeout: 180_000 },
  () => {
    let stack: Stack;
    let browser: Browser;
    let context: BrowserContext;
    let page: Page;
    const owner = {
      name: "Olivia Owner",
      email: `olivia-${Date.now()}@example.com`,
      password: "correct horse battery",
    };

    const shot = (name: string) => screenshot(page, name);

    const call = (request: APIRequestContext, method: string, url: string, data?: object) =>
      apiCall(request, stack.url, method, url, data);

    beforeAll(async () => {
      await ensureConsoleBuilt();
      stack = await startStack();
      browser = await launchBrowser((chromiumFound as { path: string }).path);
      ({ context, page } = await newPage(browser));
      await call(context.request, "POST", "/api/auth/sign-up/email", owner);
      await call(context.request, "POST", "/api/auth/sign-in/email", {
        email: owner.email,
        password: owner.password,
      });
      await call(context.request, "POST", "/api/accounts", { name: "Lumen Coffee" });
      await call(context.request, "POST", "/api/messaging/config", {
        phone_number_id: NUMBER.phoneNumberId,
        access_token: NUMBER.accessToken,
        business_account_id: NUMBER.businessAccountId,
        pin: "123456",
      });
      for (const definition of [
        { key: "company", label: "Company", type: "text" },
        { key: "orders", label: "Orders", type: "number" },
        { key: "birthday", label: "Birthday", type: "date" },
        { key: "vip", label: "VIP", type: "boolean" },
        { key: "plan", label: "Plan", type: "list", options: ["Basic", "Pro"] },
      ])
        await call(context.request, "POST", "/api/contact-attributes", definition);
    }, 180_000);

    afterAll(async () => {
      await browser?.close();
      await stack?.close();
    });

    it("edits the name, the tags, the opt-out and each defined attribute by its type", async () => {
      await stack.customer("15550100077", "Tess Typed").text("Hello, can you update my details?");
      await stack.t.app.deps.jobs.drain();
      const listed = (await call(context.request, "GET", "/api/conversations?limit=10")) as {
        conversations: Array<{ id: string; contact: { id: string; name: string | null } }>;
      };
      const conversation = listed.conversations.find((c) => c.contact.name === "Tess Typed");
      if (!conversation) throw new Error("no conversation with Tess Typed");
      const stored = async () =>
        (
          (await call(context.request, "GET", `/api/contacts/${conversation.contact.id}`)) as {
            contact: { name: string; tags: string[]; opted_out: boolean; attributes: Record<string, string> };
          }
        ).contact;

      await page.goto(`${stack.url}/inbox/${conversation.id}`);
      const panel = page.getByRole("complementary", { name: "Contact" });
      const fields = panel.getByRole("group", { name: "Defined attributes" });
      await fields.waitFor();

      // Each definition is drawn as its type: a text box, a number box, a date picker, a switch, a list.
      const company = fields.getByLabel("Company");
      const orders = fields.getByLabel("Orders");
      const birthday = fields.getByLabel("Birthday");
      const vip = fields.getByLabel("VIP");
      const plan = fields.getByLabel("Plan");
      expect(await company.getAttribute("type")).toBe("text");
      expect(await orders.getAttribute("type")).toBe("number");
      expect(await birthday.getAttribute("type")).toBe("date");
      expect(await vip.getAttribute("type")).toBe("checkbox");
      expect(await plan.evaluate((el) => el.tagName)).toBe("SELECT");
      expect(await plan.locator("option").allTextContents()).toEqual(["—", "Basic", "Pro"]);

      // Name and tags.
      await panel.getByLabel("Contact name").fill("Tess Tyler");
      await panel.getByRole("button", { name: "Save" }).click();
      await page.getByRole("heading", { name: "Tess Tyler" }).first().waitFor();
      await panel.getByLabel("New tag").fill("wholesale");
      await panel.getByRole("button", { name: "Add", exact: true }).click();
      await panel.getByRole("list", { name: "Tags" }).getByText("wholesale").waitFor();

      // Typed values: each saved when its field is left (the switch and the list at once).
      await company.fill("Lumen Roasters");
      await company.press("Enter");
      await expect.poll(async () => (await stored()).attributes.company).toBe("Lumen Roasters");
      await orders.fill("12");
      await orders.press("Tab");
      await expect.poll(async () => (await stored()).attributes.orders).toBe("12");
      await birthday.fill("1990-04-17");
      // (Tab moves between the date picker's own parts.)
      await birthday.press("Enter");
      await expect.poll(async () => (await stored()).attributes.birthday).toBe("1990-04-17");
      // Two fields changed at once (the second before the first save's answer): neither is lost.
      await vip.check();
      await plan.selectOption("Pro");
      await expect
        .poll(async () => {
          const { vip, plan } = (await stored()).attributes;
          return { vip, plan };
        })
        .toEqual({ vip: "true", plan: "Pro" });
      await new Promise((r) => setTimeout(r, 300));
      expect((await stored()).attributes).toMatchObject({ vip: "true", plan: "Pro" });
      await panel.getByLabel(/Opted out/).check();
      await expect
        .poll(async () => {
          const c = await stored();
          return [c.name, c.tags, c.opted_out];
        })
        .toEqual(["Tess Tyler", ["wholesale"], true]);

      // Stored values come back in their fields on a new visit (one changed through the API).
      await call(context.request, "PATCH", `/api/contacts/${conversation.contact.id}`, {
        attributes: { ...(await stored()).attributes, orders: "13" },
      });
      await page.reload();
      await fields.waitFor();
      await expect.poll(() => orders.inputValue()).toBe("13");
      await company.fill("");
      await company.press("Enter");
      await expect.poll(async () => "company" in (await stored()).attributes).toBe(false);
      // The other values are still stored, and shown once the panel has its refetched contact.
      expect((await stored()).attributes).toMatchObject({ vip: "true", plan: "Pro", birthday: "1990-04-17" });
      await expect.poll(() => vip.isChecked()).toBe(true);
      await expect.poll(() => plan.inputValue()).toBe("Pro");
      await expect.poll(() => birthday.inputValue()).toBe("1990-04-17");
      await shot("contact-panel-1280");
    });

    it("picks emoji for the composer and for reactions, loaded on first use from the console itself", async () => {
      await stack.customer("15550100078", "Emil Emoji").text("Thanks for the coffee!");
      await stack.t.app.deps.jobs.drain();
      const listed = (await call(context.request, "GET", "/api/conversations?limit=10")) as {
        conversations: Array<{ id: string; contact: { name: string | null } }>;
      };
      const conversation = listed.conversations.find((c) => c.contact.name === "Emil Emoji");
      if (!conversation) throw new Error("no conversation with Emil Emoji");
      const requested: string[] = [];
      page.on("request", (r) => requested.push(r.url()));
      await page.goto(`${stack.url}/inbox/${conversation.id}`);
      await page.getByRole("list", { name: "Messages" }).getByText("Thanks for the coffee!").waitFor();
      // The picker's code is not part of the page until it is opened.
      expect(requested.filter((u) => /emoji-panel|emojibase/.test(u))).toEqual([]);

      const message = page.getByLabel("Message", { exact: true });
      await message.fill("Enjoy ");
      await page.getByRole("button", { name: "Insert emoji" }).click();
      const search = page.getByLabel("Search emoji");
      await search.fill("hot beverage");
      // The picker is a grid of emoji, each named by its label.
      await page.getByRole("gridcell", { name: /^hot beverage$/i }).click();
      // (The picker gives the emoji presentation: U+FE0F after the cup.)
      await expect.poll(() => message.inputValue()).toMatch(/^Enjoy ☕\uFE0F?$/u);
      await expect(search.count()).resolves.toBe(0);
      // Code and data came from this server, the data from the console's hashed assets.
      expect(requested.some((u) => /\/assets\/emoji-panel-[^/]+\.js$/.test(u))).toBe(true);
      expect(requested.some((u) => /\/assets\/emojibase-[0-9a-f]+\/en\/data\.json$/.test(u))).toBe(true);
      expect(
        requested.filter((u) => !u.startsWith(stack.url) && !u.startsWith("data:") && !u.startsWith("blob:")),
      ).toEqual([]);
      await page.getByRole("button", { name: "Send" }).click();
      await page
        .getByRole("list", { name: "Messages" })
        .getByText(/^Enjoy ☕/u)
        .waitFor();

      // A reaction from the whole set: "More reactions" opens the same picker.
      const bubble = page.locator(".bubble-row.in").filter({ hasText: "Thanks for the coffee!" });
      await bubble.hover();
      await bubble.getByRole("button", { name: "React to message" }).click();
      await bubble.getByRole("button", { name: "More reactions" }).click();
      await page.getByLabel("Search emoji").fill("party popper");
      await shot("emoji-picker-1280");
      await page.getByRole("gridcell", { name: /^party popper$/i }).click();
      await bubble.getByRole("list", { name: "Reactions" }).getByText("🎉").waitFor();
    });

    it("opens a 1,000-message thread on its latest messages, loads older ones when scrolled up, and keeps only the rows in view in the page", async () => {
      const account = ((await call(context.request, "GET", "/api/me")) as { account: { id: string } }).account
        .id;
      const { rows } = await stack.t.database.pool.query<{ id: string }>(
        `with c as (
         insert into contacts (account_id, wa_id, name, phone)
         values ($1, '15550100079', 'Lena Long', '15550100079') returning id, account_id)
       insert into conversations (account_id, contact_id, last_message_at)
       select account_id, id, now() from c returning id`,
        [account],
      );
      const id = rows[0]!.id;
      await stack.t.database.pool.query(
        `insert into messages (account_id, conversation_id, direction, sender_type, type, text, status, created_at)
       select $1, $2, 'inbound', 'customer', 'text', 'Line ' || k, 'received', now() - (1001 - k) * interval '1 second'
       from generate_series(1, 1000) k`,
        [account, id],
      );
      const requested: string[] = [];
      page.on("request", (r) => {
        if (r.url().includes(`/api/conversations/${id}/messages`)) requested.push(r.url());
      });
      await page.goto(`${stack.url}/inbox/${id}`);
      const thread = page.getByRole("list", { name: "Messages" });
      await thread.getByText("Line 1000", { exact: true }).waitFor();
      const bubbles = () => thread.locator("li.bubble-row").count();
      // The latest page only (not all of it in the page), scrolled to its end.
      expect(await bubbles()).toBeGreaterThan(5);
      expect(await bubbles()).toBeLessThan(60);
      expect(await thread.getByText("Line 900", { exact: true }).count()).toBe(0);
      const scroller = page.locator(".messages");
      const atEnd = () =>
        scroller.evaluate((el) => Math.abs(el.scrollHeight - el.clientHeight - el.scrollTop) < 5);
      await expect.poll(atEnd).toBe(true);
      expect(requested.filter((u) => u.includes("cursor=")).length).toBe(0);

      // Scrolled to the top: the hundred before come in above, and what was in view stays in view.
      const line901 = thread.getByText("Line 901", { exact: true });
      await scroller.evaluate((el) => el.scrollTo(0, 0));
      await line901.waitFor();
      await expect.poll(() => requested.filter((u) => u.includes("cursor=")).length).toBeGreaterThan(0);
      await expect
        .poll(() =>
          line901.evaluate((el) => {
            const box = el.getBoundingClientRect();
            const view = (el.closest(".messages") as HTMLElement).getBoundingClientRect();
            return box.top >= view.top - 1 && box.bottom <= view.bottom + 1;
          }),
        )
        .toBe(true);
      // Again and again, to the very first message, with a day separator above it.
      await expect
        .poll(
          async () => {
            await scroller.evaluate((el) => el.scrollTo(0, 0));
            return thread.getByText("Line 1", { exact: true }).count();
          },
          { timeout: 60_000, interval: 500 },
        )
        .toBe(1);
      await thread.locator(".day-separator").first().waitFor();
      // A thousand messages loaded, a screenful and a few around in the page.
      expect(await bubbles()).toBeLessThan(60);

      // A new message while at the end scrolls into view; the thread is followed.
      await scroller.evaluate((el) => el.scrollTo(0, el.scrollHeight));
      await expect.poll(atEnd).toBe(true);
      await stack.customer("15550100079", "Lena Long").text("Are you still there?");
      const latest = thread.getByText("Are you still there?", { exact: true });
      await latest.waitFor({ timeout: 10_000 });
      await expect.poll(atEnd).toBe(true);
      await shot("long-thread-1280");
    });
  },
);
