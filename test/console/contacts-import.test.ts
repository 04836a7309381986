import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ensureConsoleBuilt,
  findChromium,
  launchBrowser,
  newPage,
  type Stack,
  startStack,
} from "./browser.js";

const chromiumFound = findChromium();
if ("missing" in chromiumFound) console.log(chromiumFound.missing);

describe.skipIf("missing" in chromiumFound)(
  "the contact import wizard in a real browser",
  { timeout: 180_000 },
  () => {
    let stack: Stack;
    let browser: Browser;
    let context: BrowserContext;
    let page: Page;

    beforeAll(async () => {
      await ensureConsoleBuilt();
      stack = await startStack();
      browser = await launchBrowser((chromiumFound as { path: string }).path);
      ({ context, page } = await newPage(browser));
    }, 180_000);

    afterAll(async () => {
      await browser?.close();
      await stack?.close();
    });

    it("uploads a CSV, maps its columns, shows the progress and the result, and offers the errors", async () => {
      await page.goto(`${stack.url}/sign-up`);
      await page.getByLabel("Your name").fill("Iris Importer");
      await page.getByLabel("Email").fill(`iris-${Date.now()}@example.com`);
      await page.getByLabel("Password").fill("correct horse battery");
      await page.getByRole("button", { name: "Sign up" }).click();
      await page.getByLabel("Business name").fill("Lumen Coffee");
      await page.getByRole("button", { name: "Create account" }).click();
      await page.getByRole("heading", { name: "WhatsApp channel" }).waitFor();

      await page.goto(`${stack.url}/contacts`);
      await page.getByRole("link", { name: "Import CSV" }).click();
      await page.getByRole("heading", { name: "Import contacts" }).waitFor();
      const csv =
        "\uFEFFMobile;Full name;Town\r\n" +
        '+351 912 345 678;"Silva; Ana";Porto\r\n' +
        "+44 7911 123456;Ben Jones;Leeds\r\n" +
        "12;Broken Number;Faro\r\n";
      await page.getByLabel(/CSV file/).setInputFiles({
        name: "customers.csv",
        mimeType: "text/csv",
        buffer: Buffer.from(csv),
      });
      // The preview: the columns with their suggested fields, and the first rows.
      await page.getByRole("heading", { name: "Map the columns of customers.csv" }).waitFor();
      await expect(page.getByLabel("Field for column Mobile").inputValue()).resolves.toBe("phone");
      await expect(page.getByLabel("Field for column Full name").inputValue()).resolves.toBe("name");
      await page.getByRole("cell", { name: "Silva; Ana" }).waitFor();
      // The town is not wanted: skip it.
      await page.getByLabel("Field for column Town").selectOption("");
      await page.getByLabel(/Tags for every imported contact/).fill("imported");
      await page.getByRole("button", { name: "Start import" }).click();

      await page.getByRole("heading", { name: "Import finished" }).waitFor();
      await expect(page.getByRole("progressbar", { name: "Import progress" }).isVisible()).resolves.toBe(
        true,
      );
      const result = page.getByRole("list", { name: "Import result" });
      await result.getByText("Created: 2").waitFor();
      await result.getByText("Errors: 1").waitFor();
      const download = page.getByRole("link", { name: "Download the rows with errors" });
      const errors = await context.request.get(`${stack.url}${await download.getAttribute("href")}`);
      expect(await errors.text()).toBe("row,value,reason\r\n4,12,not a valid phone number\r\n");

      await page.getByRole("link", { name: "See contacts" }).click();
      await page.getByRole("link", { name: "Silva; Ana" }).waitFor();
      await page.getByRole("link", { name: "Ben Jones" }).click();
      await page.getByRole("heading", { name: "Ben Jones" }).waitFor();
      await page.getByText("+447911123456").waitFor();
      // No town: it was skipped.
      await page.getByText("No attributes.").waitFor();
      await page.getByRole("button", { name: "Erase contact" }).click();
      await page.getByRole("button", { name: "Yes, erase Ben Jones" }).click();
      await page.getByRole("heading", { name: "Contacts" }).waitFor();
      await page.getByRole("link", { name: "Silva; Ana" }).waitFor();
      await expect(page.getByRole("link", { name: "Ben Jones" }).count()).resolves.toBe(0);
    });
  },
);
