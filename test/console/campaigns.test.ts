import { sql } from "drizzle-orm";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CAMPAIGN_TEMPLATES } from "../campaigns/helpers.js";
import {
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
  "the Campaigns screen in a real browser",
  { timeout: 180_000 },
  () => {
    let stack: Stack;
    let browser: Browser;
    let page: Page;

    beforeAll(async () => {
      await ensureConsoleBuilt();
      stack = await startStack();
      stack.sandbox.setTemplates(NUMBER.businessAccountId, CAMPAIGN_TEMPLATES);
      // Sends take a moment, so the progress visibly moves.
      stack.sandbox.inject({ method: "POST", path: /\/messages$/ }, { delayMs: 400, times: 1_000 });
      browser = await launchBrowser((chromiumFound as { path: string }).path);
      ({ page } = await newPage(browser));
      // The owner and the channel through the API (the cookie session is the browser's).
      const call = async (url: string, data: unknown) => {
        const response = await page.request.post(`${stack.url}${url}`, {
          data,
          headers: { origin: stack.url },
        });
        expect(response.status(), `${url}: ${await response.text()}`).toBeLessThan(300);
        return response.json();
      };
      await call("/api/auth/sign-up/email", {
        email: "cam@example.com",
        password: "a long password",
        name: "Cam",
      });
      await call("/api/auth/sign-in/email", { email: "cam@example.com", password: "a long password" });
      const { account } = await call("/api/accounts", { name: "Lumen Coffee" });
      await call("/api/messaging/config", {
        phone_number_id: NUMBER.phoneNumberId,
        access_token: NUMBER.accessToken,
        business_account_id: NUMBER.businessAccountId,
        pin: "123456",
      });
      await call("/api/messaging/templates/sync", {});
      await stack.t.database.db.execute(sql`
      insert into contacts (account_id, wa_id, name, phone, tags, attributes, opted_out)
      select ${account.id}::uuid, '1555020' || lpad(n::text, 4, '0'), 'Guest ' || n, '1555020' || lpad(n::text, 4, '0'),
             case when n <= 200 then '{vip}'::text[] else '{}'::text[] end,
             jsonb_build_object('product', 'oat latte'), n in (199, 200)
        from generate_series(1, 220) as n`);
    }, 180_000);

    afterAll(async () => {
      await browser?.close();
      await stack?.close();
    });

    const shot = (name: string) => screenshot(page, name);

    it("walks the wizard: template, mapped parameters with a preview, audience count, samples, test, start", async () => {
      await page.goto(`${stack.url}/campaigns`);
      await page.getByRole("heading", { name: "Campaigns" }).waitFor();
      await page.getByText("No campaigns yet").waitFor();
      await page.getByRole("link", { name: "New campaign" }).click();

      await page.getByLabel("Name", { exact: true }).fill("Oat latte is back");
      await page.getByLabel("Template").selectOption("restock|en_US");
      await page.getByLabel("Body {{1}}").fill("{{contact.name|there}}");
      await page.getByLabel("Body {{2}}").fill("{{contact.attributes.product|drink}}");
      await expect(page.getByTestId("rendered-preview").textContent()).resolves.toBe(
        "Hi Ada, the drink you wanted is back.",
      );
      // The count follows the audience as it is typed, before anything is saved.
      await page.getByTestId("recipient-count").filter({ hasText: "218 recipients" }).waitFor();
      await page.getByLabel("Has any of these tags").fill("vip");
      await page.getByTestId("recipient-count").filter({ hasText: "198 recipients" }).waitFor();
      await page.getByText("Left out: 2 opted out, 0 without a number, 0 duplicates.").waitFor();
      await page.getByLabel("Attributes equal").fill("product=flat white");
      await page.getByTestId("recipient-count").filter({ hasText: "0 recipients" }).waitFor();
      await page.getByLabel("Attributes equal").fill("product=oat latte");
      await page.getByTestId("recipient-count").filter({ hasText: "198 recipients" }).waitFor();
      await page
        .getByText(/^Guest \d+: Hi Guest \d+, the oat latte you wanted is back\.$/)
        .first()
        .waitFor();
      const { rows: drafts } = await stack.t.database.db.execute<{ n: number }>(
        sql`select count(*)::int as n from campaigns`,
      );
      expect(drafts[0]?.n).toBe(0);
      await page.getByTestId("recipient-count").scrollIntoViewIfNeeded();
      await shot("campaign-wizard-1280");
      await page.getByRole("button", { name: "Save draft" }).click();
      await page.getByText("Draft saved").waitFor();

      await page.getByLabel("Test number").fill("+1 555 010 0999");
      await page.getByRole("button", { name: "Send test" }).click();
      await page.getByText("Test sent to +1 555 010 0999").waitFor();

      await page.getByRole("button", { name: "Start now" }).click();
      await page.getByRole("heading", { name: "Oat latte is back" }).waitFor();
    });

    it("shows the campaign's progress live, to the end, and the recipients by status", async () => {
      const progress = page.getByRole("progressbar", { name: "Progress" });
      // Part-way first, then all 198 without a reload.
      await page.waitForFunction(() => {
        const bar = document.querySelector('[role="progressbar"]');
        const now = Number(bar?.getAttribute("aria-valuenow"));
        return now > 0 && now < 198;
      });
      await shot("campaign-progress-1280");
      await page.getByText("completed", { exact: true }).waitFor({ timeout: 60_000 });
      await expect(progress.getAttribute("aria-valuenow")).resolves.toBe("198");
      await expect(page.getByTestId("count-sent").textContent()).resolves.toBe("198");

      // A customer reads it: the count moves without a reload.
      const { rows } = await stack.t.database.db.execute<{ wa: string; message_id: string }>(sql`
      select k.wa_id as wa, m.message_id from campaign_recipients r
        join contacts k on k.id = r.contact_id join messages m on m.id = r.message_id
       order by r.contact_id limit 1`);
      const first = rows[0] as { wa: string; message_id: string };
      await stack.customer(first.wa, "Guest").status({ messageId: first.message_id, status: "read" });
      await page.getByTestId("count-read").filter({ hasText: "1" }).waitFor();

      // Past the first 100: "Load more" follows the cursor, with and without the status filter.
      const rowCount = (n: number) =>
        page.waitForFunction((want) => document.querySelectorAll("tbody tr").length === want, n);
      await rowCount(100);
      await page.getByTestId("recipients-shown").filter({ hasText: "100 shown" }).waitFor();
      await page.getByRole("button", { name: "Load more" }).click();
      await rowCount(198);
      await page.getByTestId("recipients-shown").filter({ hasText: "198 shown (all)" }).waitFor();
      await expect(page.getByRole("button", { name: "Load more" }).count()).resolves.toBe(0);
      await page.getByLabel("Filter by status").selectOption("sent");
      await rowCount(100);
      await page.getByRole("button", { name: "Load more" }).click();
      await rowCount(197);
      await page.getByTestId("recipients-shown").scrollIntoViewIfNeeded();
      await shot("campaign-recipients-1280");

      await page.getByLabel("Filter by status").selectOption("read");
      await page.waitForFunction(() => document.querySelectorAll("tbody tr").length === 1);
      const csv = page.getByRole("link", { name: "Download CSV" });
      await expect(csv.getAttribute("href")).resolves.toMatch(/recipients\.csv\?status=read$/);

      await page.goto(`${stack.url}/campaigns`);
      await page.getByRole("link", { name: "Oat latte is back" }).waitFor();
      await page.getByText("198 / 198").waitFor();
      await shot("campaigns-1280");
    });

    it("gives the template's URL button its parameter fields, saved with the draft", async () => {
      await page.goto(`${stack.url}/campaigns/new`);
      await page.getByLabel("Name", { exact: true }).fill("New arrivals");
      await page.getByLabel("Template").selectOption("photo_offer|en_US");
      await page.getByLabel("Header image (https link or media id)").fill("https://cdn.test/new.jpg");
      await page.getByText(/Samples once the parameters are complete: .*buttons/).waitFor();
      await page.getByLabel('Button "Shop" URL {{1}}').fill("{{contact.phone}}");
      await page.getByTestId("template-problem").waitFor({ state: "detached" });
      await page
        .getByText(/^Guest \d+: New arrivals for you\.$/)
        .first()
        .waitFor();
      await page.getByRole("button", { name: "Save draft" }).click();
      await page.getByText("Draft saved").waitFor();
      await shot("campaign-wizard-button-1280");
      const { rows } = await stack.t.database.db.execute<{ parameters: unknown }>(
        sql`select parameters from campaigns where name = 'New arrivals'`,
      );
      expect(rows[0]?.parameters).toEqual({
        header: ["https://cdn.test/new.jpg"],
        buttons: [{ index: 0, parameters: ["{{contact.phone}}"] }],
      });
      // Opened again, the draft shows its button parameter.
      const id = (
        await stack.t.database.db.execute<{ id: string }>(
          sql`select id from campaigns where name = 'New arrivals'`,
        )
      ).rows[0]?.id;
      await page.goto(`${stack.url}/campaigns/new?draft=${id}`);
      await expect(page.getByLabel('Button "Shop" URL {{1}}').inputValue()).resolves.toBe(
        "{{contact.phone}}",
      );
    });
  },
);
