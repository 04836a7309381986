import { sql } from "drizzle-orm";
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
  takeScreenshots,
} from "./browser.js";

const chromiumFound = findChromium();
if ("missing" in chromiumFound) console.log(chromiumFound.missing);

describe.skipIf("missing" in chromiumFound)("an agent's day in the console", { timeout: 180_000 }, () => {
  let stack: Stack;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const owner = {
    name: "Olivia Owner",
    email: `olivia-${Date.now()}@example.com`,
    password: "correct horse battery",
  };
  const bea = {
    name: "Bea Agent",
    email: `bea-${Date.now()}@example.com`,
    password: "another long password",
  };
  let beaId = "";

  const shot = (name: string, target: Page = page) => screenshot(target, name);

  const call = (request: APIRequestContext, method: string, url: string, data?: object) =>
    apiCall(request, stack.url, method, url, data);

  const signUp = async (
    request: APIRequestContext,
    who: { name: string; email: string; password: string },
  ) => {
    await call(request, "POST", "/api/auth/sign-up/email", who);
    await call(request, "POST", "/api/auth/sign-in/email", { email: who.email, password: who.password });
    return (await call(request, "GET", "/api/me")) as { user: { id: string } };
  };

  /** The conversation the customer's first message opened. */
  const conversationOf = async (name: string) => {
    await stack.t.app.deps.jobs.drain();
    const listed = (await call(context.request, "GET", "/api/conversations?limit=100")) as {
      conversations: Array<{ id: string; contact: { name: string | null } }>;
    };
    const found = listed.conversations.find((c) => c.contact.name === name);
    if (!found) throw new Error(`no conversation with ${name}`);
    return found.id;
  };

  beforeAll(async () => {
    await ensureConsoleBuilt();
    stack = await startStack();
    browser = await launchBrowser((chromiumFound as { path: string }).path);
    ({ context, page } = await newPage(browser));
    await signUp(context.request, owner);
    await call(context.request, "POST", "/api/accounts", { name: "Lumen Coffee" });
    await call(context.request, "POST", "/api/messaging/config", {
      phone_number_id: NUMBER.phoneNumberId,
      access_token: NUMBER.accessToken,
      business_account_id: NUMBER.businessAccountId,
      pin: "123456",
    });
    const invited = (await call(context.request, "POST", "/api/accounts/invitations", {
      email: bea.email,
    })) as {
      invitation: { token: string };
    };
    const beaContext = await browser.newContext();
    try {
      beaId = (await signUp(beaContext.request, bea)).user.id;
      // The owner's link needs a verified email (as after the verification mail's link).
      await stack.t.database.pool.query("update users set email_verified = true where id = $1", [beaId]);
      await call(beaContext.request, "POST", `/api/invitations/${invited.invitation.token}/accept`, {});
    } finally {
      await beaContext.close();
    }
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await stack?.close();
  });

  it("shows a conversation's own status and assignee when opened by its URL, and keeps a change made in place", async () => {
    await stack.customer("15550100001", "Pat Pending").text("Is my order on its way?");
    const id = await conversationOf("Pat Pending");
    await call(context.request, "PATCH", `/api/conversations/${id}`, {
      status: "pending",
      assigned_to: beaId,
    });

    // The inbox lists open conversations: this one is not in the list the page loads.
    await page.goto(`${stack.url}/inbox/${id}`);
    await page.getByRole("list", { name: "Messages" }).getByText("Is my order on its way?").waitFor();
    const status = page.getByLabel("Status");
    const assignee = page.getByLabel("Assignee");
    await expect.poll(() => status.inputValue()).toBe("pending");
    await expect.poll(() => assignee.inputValue()).toBe(beaId);
    expect(await assignee.locator("option:checked").textContent()).toBe(bea.name);

    // Changed in place: the select keeps the new value (the list, filtered on "open", never had it).
    await status.selectOption("closed");
    await page.waitForTimeout(1_000);
    expect(await status.inputValue()).toBe("closed");
    const stored = (await call(context.request, "GET", `/api/conversations/${id}`)) as {
      conversation: { status: string };
    };
    expect(stored.conversation.status).toBe("closed");

    // Another agent's change arrives by the event stream and shows without a reload.
    await call(context.request, "PATCH", `/api/conversations/${id}`, { status: "open", assigned_to: null });
    await expect.poll(() => status.inputValue(), { timeout: 15_000 }).toBe("open");
    await expect.poll(() => assignee.inputValue(), { timeout: 15_000 }).toBe("");
  });

  it("fits every screen in a 390 px phone, a very long contact name included", async () => {
    const long = "Maximiliana Alexandrina Konstantinopoulou-Vanderbilt-Featherstonehaugh";
    await stack
      .customer("15550100002", long)
      .text(
        "Hello! https://example.com/a/very/long/link/that/does/not/break/anywhere/at/all/0123456789abcdef",
      );
    const id = await conversationOf(long);
    await call(
      context.request,
      "PATCH",
      `/api/contacts/${(await call(context.request, "GET", `/api/conversations/${id}`)).conversation.contact.id}`,
      {
        tags: ["wholesale-customer-with-a-long-tag", "vip"],
      },
    );
    const flow = (await call(context.request, "POST", "/api/flows", { template_slug: "welcome_menu" })) as {
      flow: { id: string };
    };
    await call(context.request, "POST", "/api/canned-responses", {
      shortcut: "shipping",
      text: "We ship to every country in the European Union within three working days, tracked and insured.",
    });
    await call(context.request, "POST", "/api/api-keys", { name: "Zapier integration for the shop" });
    await call(context.request, "POST", "/api/messaging/templates/sync", {});

    const phone = await newPage(browser, 390, 844);
    try {
      await phone.context.addCookies(await context.cookies());
      const p = phone.page;
      const screens: Array<[string, string, () => Promise<void>]> = [
        ["inbox", "/inbox", () => p.getByRole("link", { name: /Maximiliana/ }).waitFor()],
        [
          "thread",
          `/inbox/${id}`,
          () => p.getByRole("list", { name: "Messages" }).getByText("Hello!").waitFor(),
        ],
        ["contacts", "/contacts", () => p.getByText(long).first().waitFor()],
        ["flows", "/flows", () => p.getByRole("link", { name: "Welcome menu", exact: true }).waitFor()],
        ["canvas", `/flows/${flow.flow.id}`, () => p.locator(".react-flow__node").first().waitFor()],
        ["runs", `/flows/${flow.flow.id}/runs`, () => p.getByRole("heading").first().waitFor()],
        ["channel", "/channel", () => p.getByText("Connected", { exact: true }).waitFor()],
        ["team", "/settings/team", () => p.getByText(bea.name).first().waitFor()],
        ["templates", "/settings/templates", () => p.getByText("order_update").first().waitFor()],
        ["canned", "/settings/canned", () => p.getByText("/shipping").waitFor()],
        ["api-keys", "/settings/api-keys", () => p.getByText("Zapier integration for the shop").waitFor()],
        ["webhooks", "/settings/webhooks", () => p.getByRole("heading").first().waitFor()],
        ["automation", "/settings/automation", () => p.getByRole("heading").first().waitFor()],
        ["contact-import", "/contacts/import", () => p.getByRole("heading").first().waitFor()],
        ["campaigns", "/campaigns", () => p.getByRole("heading").first().waitFor()],
        [
          "campaign-wizard",
          "/campaigns/new",
          () => p.getByRole("heading", { name: "1. Template" }).waitFor(),
        ],
      ];
      const wide: string[] = [];
      for (const [name, url, ready] of screens) {
        await p.goto(`${stack.url}${url}`);
        await ready();
        await p.waitForTimeout(300);
        await shot(`${name}-390`, p);
        const width = await p.evaluate(() => document.documentElement.scrollWidth);
        if (width > 390) wide.push(`${name} is ${width} px wide`);
        // Nor does anything run off the right edge inside a clipping box (the canvas pans: not it).
        const clipped = await p.evaluate(() =>
          [...document.querySelectorAll("#main *")]
            .filter((el) => !el.closest(".react-flow") && el.getClientRects().length > 0)
            .filter((el) => el.getBoundingClientRect().right > window.innerWidth + 1)
            .filter(
              (el) => ![...el.children].some((c) => c.getBoundingClientRect().right > window.innerWidth + 1),
            )
            .slice(0, 3)
            .map((el) => `${el.tagName.toLowerCase()}.${el.className}`),
        );
        if (clipped.length) wide.push(`${name} clips ${clipped.join(", ")}`);
      }
      expect(wide).toEqual([]);
    } finally {
      await phone.context.close();
    }
  });

  it("counts unread conversations in the page title and draws ticks and icons as SVG, not emoji", async () => {
    await stack.customer("15550100003", "Una Unread").text("Anyone there?");
    await stack.t.app.deps.jobs.drain();
    await page.goto(`${stack.url}/contacts`);
    await expect.poll(() => page.title(), { timeout: 15_000 }).toMatch(/^\(\d+\) wa-inbox$/);
    const before = Number((await page.title()).match(/\d+/)?.[0]);
    await stack.customer("15550100004", "Noor New").text("Hello?");
    await expect.poll(() => page.title(), { timeout: 15_000 }).toBe(`(${before + 1}) wa-inbox`);

    const id = await conversationOf("Una Unread");
    await page.goto(`${stack.url}/inbox/${id}`);
    await page.getByLabel("Message", { exact: true }).fill("Yes, here!");
    await page.getByRole("button", { name: "Send" }).click();
    const tick = page.locator(".bubble.out", { hasText: "Yes, here!" }).getByRole("img", { name: "Sent" });
    await tick.waitFor();
    expect(await tick.locator("svg").count()).toBe(1);
    expect((await tick.textContent())?.trim()).toBe("");
    // The navigation's icons are SVG too.
    expect(
      await page.getByRole("navigation", { name: "Main" }).locator("svg").count(),
    ).toBeGreaterThanOrEqual(5);
  });

  it("says a wrong password in words, and never Live while the connection is lost", async () => {
    const other = await newPage(browser);
    try {
      const p = other.page;
      await p.goto(`${stack.url}/sign-in`);
      await p.getByLabel("Email").fill(owner.email);
      await p.getByLabel("Password").fill("not the password");
      await p.getByRole("button", { name: "Sign in" }).click();
      await p.getByRole("alert").filter({ hasText: "Wrong email or password" }).waitFor();
      expect(await p.getByText("Unauthorized").count()).toBe(0);
    } finally {
      await other.context.close();
    }

    await page.goto(`${stack.url}/inbox`);
    await page.getByText("Live", { exact: true }).waitFor();
    await stack.stop();
    await page.getByText("Connection to the service lost. Retrying…").waitFor();
    expect(await page.getByText("Live", { exact: true }).count()).toBe(0);
    await page.getByText("Offline", { exact: true }).waitFor();
    await stack.start();
    await page.getByText("Live", { exact: true }).waitFor({ timeout: 30_000 });
    await page.getByText("Connection to the service lost").waitFor({ state: "detached" });
  });

  it("follows the system's dark mode, and the switch overrides it for this browser", async () => {
    const dark = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: "dark" });
    try {
      await dark.addCookies(await context.cookies());
      const p = await dark.newPage();
      const background = () =>
        p.evaluate(() => getComputedStyle(document.querySelector(".inbox-list") as Element).backgroundColor);
      const luminance = (rgb: string) => {
        const [r = 0, g = 0, b = 0] = (rgb.match(/\d+/g) ?? []).map(Number);
        return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
      };
      await p.goto(`${stack.url}/inbox/${await conversationOf("Pat Pending")}`);
      await p.locator(".inbox-list").waitFor();
      await p.getByRole("list", { name: "Messages" }).getByText("Is my order on its way?").waitFor();
      expect(luminance(await background())).toBeLessThan(0.3);
      await shot("inbox-dark-1280", p);
      if (takeScreenshots) {
        const phone = await dark.newPage();
        await phone.setViewportSize({ width: 390, height: 844 });
        await phone.goto(`${stack.url}/inbox/${await conversationOf("Pat Pending")}`);
        await phone.getByRole("list", { name: "Messages" }).getByText("Is my order on its way?").waitFor();
        await shot("thread-dark-390", phone);
        await phone.close();
      }
      // System → light: light even though the system is dark, and still after a reload.
      await p.getByRole("button", { name: "System theme (change)" }).click();
      await p.getByRole("button", { name: "Light theme (change)" }).waitFor();
      expect(luminance(await background())).toBeGreaterThan(0.8);
      await p.reload();
      await p.locator(".inbox-list").waitFor();
      expect(luminance(await background())).toBeGreaterThan(0.8);
      await p.getByRole("button", { name: "Light theme (change)" }).click();
      await p.getByRole("button", { name: "Dark theme (change)" }).waitFor();
      expect(luminance(await background())).toBeLessThan(0.3);
    } finally {
      await dark.close();
    }
  });

  it("shows the callback URL to give Meta, and copies keys, links and secrets with one click", async () => {
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: stack.url });
    const clipboard = () => page.evaluate(() => navigator.clipboard.readText());
    await page.goto(`${stack.url}/channel`);
    const callback = page.locator(".copy-field", { has: page.getByLabel("Callback URL") });
    expect(await callback.getByLabel("Callback URL").inputValue()).toBe(`${stack.url}/api/messaging/webhook`);
    await callback.getByRole("button", { name: "Copy" }).click();
    await callback.getByRole("button", { name: "Copied" }).waitFor();
    expect(await clipboard()).toBe(`${stack.url}/api/messaging/webhook`);

    await page.goto(`${stack.url}/settings/api-keys`);
    await page.getByLabel("Name").fill("Copied key");
    await page.getByRole("button", { name: "Create key" }).click();
    const key = page.locator(".copy-field", { has: page.getByLabel("New API key") });
    await key.getByRole("button", { name: "Copy" }).click();
    expect(await clipboard()).toBe(await key.getByLabel("New API key").inputValue());
    expect(await clipboard()).toMatch(/.{20,}/);

    await page.goto(`${stack.url}/settings/team`);
    await page.getByLabel("Their email").fill(`zoe-${Date.now()}@example.com`);
    await page.getByRole("button", { name: "Create invitation" }).click();
    const link = page.locator(".copy-field", { has: page.getByLabel("Invitation link") });
    await link.getByRole("button", { name: "Copy" }).click();
    expect(await clipboard()).toContain(`${stack.url}/invite/`);
  });

  it("draws a day's comforts: bot buttons, day separators, who sent what, images to view, attachments to check, shortcuts, contact editing", async () => {
    const me = (await call(context.request, "GET", "/api/me")) as { user: { id: string } };
    const flows = (await call(context.request, "GET", "/api/flows?limit=50")) as {
      flows: Array<{ id: string; name: string }>;
    };
    let menu = flows.flows.find((f) => f.name === "Welcome menu");
    if (!menu)
      menu = (
        (await call(context.request, "POST", "/api/flows", { template_slug: "welcome_menu" })) as {
          flow: { id: string; name: string };
        }
      ).flow;
    await call(context.request, "POST", `/api/flows/${menu.id}/activate`, { status: "active" });
    const bo = stack.customer("15550100005", "Bo Buttons");
    await bo.text("hi there");
    const id = await conversationOf("Bo Buttons");
    await call(context.request, "POST", `/api/flows/${menu.id}/activate`, { status: "draft" });

    await page.goto(`${stack.url}/inbox/${id}`);
    const thread = page.getByRole("list", { name: "Messages" });
    // The bot's buttons, as the customer saw them.
    const offered = thread.getByRole("list", { name: "Buttons offered" });
    await offered.waitFor({ timeout: 30_000 });
    expect(await offered.getByRole("listitem").allTextContents()).toEqual([
      "An order",
      "Billing",
      "Something else",
    ]);
    // A day separator before the first message of the day.
    await thread.locator(".day-separator", { hasText: "Today" }).first().waitFor();

    // An agent's reply says who wrote it.
    await page.getByLabel("Message", { exact: true }).fill("I can help with that.");
    await page.getByRole("button", { name: "Send" }).click();
    await thread.locator(".bubble.out", { hasText: "I can help with that." }).getByText(owner.name).waitFor();

    // A tiny picture from the customer is shown at a visible size, and opens in a viewer.
    const { png } = await import("./png.js");
    const tiny = png(8, 8);
    const mediaId = stack.sandbox.addMedia({
      bytes: tiny,
      mimeType: "image/png",
      phoneNumberId: NUMBER.phoneNumberId,
    });
    const { createHash } = await import("node:crypto");
    await bo.media({
      type: "image",
      mediaId,
      mimeType: "image/png",
      sha256: createHash("sha256").update(tiny).digest("hex"),
    });
    const picture = thread.locator(".bubble.in img.media-image");
    await picture.waitFor({ timeout: 30_000 });
    await expect
      .poll(() => picture.evaluate((img: HTMLImageElement) => img.naturalWidth), { timeout: 15_000 })
      .toBe(8);
    const box = await picture.boundingBox();
    expect(box?.width ?? 0).toBeGreaterThanOrEqual(100);
    expect(box?.height ?? 0).toBeGreaterThanOrEqual(80);
    await thread.getByRole("button", { name: "View image" }).click();
    const viewer = page.getByRole("dialog", { name: "Image viewer" });
    await viewer.waitFor();
    expect(((await viewer.locator("img").boundingBox())?.width ?? 0) >= 300).toBe(true);
    await page.keyboard.press("Escape");
    await viewer.waitFor({ state: "hidden" });

    // An attachment is previewed before it goes, and can be taken back.
    const photo = { name: "roast.png", mimeType: "image/png", buffer: png(160, 100) };
    await page.locator('input[type="file"]').setInputFiles(photo);
    const preview = page.getByRole("region", { name: "Attachment to send" });
    await preview.getByRole("img", { name: "Preview of roast.png" }).waitFor();
    const sentBefore = stack.accepted.filter((m) => m.type === "image").length;
    await preview.getByRole("button", { name: "Remove" }).click();
    await preview.waitFor({ state: "detached" });
    expect(stack.accepted.filter((m) => m.type === "image").length).toBe(sentBefore);
    await page.locator('input[type="file"]').setInputFiles(photo);
    await page.getByRole("button", { name: "Send attachment" }).click();
    await expect
      .poll(() => stack.accepted.filter((m) => m.type === "image").length, { timeout: 30_000 })
      .toBe(sentBefore + 1);

    // Keyboard shortcuts: the list, assign to me, reply, close, search.
    await page.locator("body").click({ position: { x: 5, y: 400 } });
    await page.keyboard.press("?");
    const help = page.getByRole("dialog", { name: "Keyboard shortcuts" });
    await help.waitFor();
    await help.getByText("Assign to me").waitFor();
    await page.keyboard.press("Escape");
    await help.waitFor({ state: "hidden" });
    await page.keyboard.press("a");
    await expect.poll(() => page.getByLabel("Assignee").inputValue(), { timeout: 15_000 }).toBe(me.user.id);
    await page.keyboard.press("r");
    await expect
      .poll(() => page.getByLabel("Message", { exact: true }).evaluate((el) => el === document.activeElement))
      .toBe(true);
    await page.keyboard.press("Escape");
    await page.getByLabel("Message", { exact: true }).evaluate((el: HTMLElement) => el.blur());
    await page.keyboard.press("c");
    await expect.poll(() => page.getByLabel("Status").inputValue(), { timeout: 15_000 }).toBe("closed");
    await page.keyboard.press("/");
    await expect
      .poll(() => page.getByLabel("Search conversations").evaluate((el) => el === document.activeElement))
      .toBe(true);

    // The contact is edited in the side panel: name, opt-out, attributes.
    const panel = page.getByRole("complementary", { name: "Contact" });
    await panel.getByLabel("Contact name").fill("Bo Baptiste");
    await panel.getByRole("button", { name: "Save" }).click();
    await page.getByRole("heading", { name: "Bo Baptiste" }).first().waitFor();
    await panel.getByLabel("Attribute name").fill("city");
    await panel.getByLabel("Attribute value").fill("Lisbon");
    await panel.getByRole("button", { name: "Set" }).click();
    await panel.getByText("Lisbon").waitFor();
    await panel.getByLabel(/Opted out/).check();
    const stored = (await call(context.request, "GET", `/api/conversations/${id}`)) as {
      conversation: { contact: { id: string } };
    };
    await expect
      .poll(async () => {
        const c = (await call(context.request, "GET", `/api/contacts/${stored.conversation.contact.id}`)) as {
          contact: { name: string; opted_out: boolean; attributes: Record<string, string> };
        };
        return [c.contact.name, c.contact.opted_out, c.contact.attributes.city];
      })
      .toEqual(["Bo Baptiste", true, "Lisbon"]);
    await shot("thread-1280");
  });

  it("notifies, with a sound, a new message in my conversation and a new assignment; the bell turns it off", async () => {
    const me = (await call(context.request, "GET", "/api/me")) as { user: { id: string } };
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    try {
      await ctx.grantPermissions(["notifications"], { origin: stack.url });
      await ctx.addCookies(await context.cookies());
      // The notifications the page shows, as the browser is asked for them.
      await ctx.addInitScript(() => {
        const shown: Array<{ title: string; body?: string }> = [];
        (window as unknown as { shown: typeof shown }).shown = shown;
        const Real = window.Notification;
        class Recorded extends Real {
          constructor(title: string, options?: NotificationOptions) {
            super(title, options);
            shown.push({ title, body: options?.body });
          }
        }
        Object.defineProperty(Recorded, "permission", { get: () => Real.permission });
        window.Notification = Recorded as typeof Notification;
      });
      const p = await ctx.newPage();
      const shown = () =>
        p.evaluate(() => (window as unknown as { shown: Array<{ title: string; body?: string }> }).shown);
      await stack.customer("15550100006", "Mo Mine").text("First message");
      const mine = await conversationOf("Mo Mine");
      await p.goto(`${stack.url}/contacts`);
      await p.getByText("Live", { exact: true }).waitFor();
      await p.getByRole("button", { name: "Notifications on (turn off)" }).waitFor();

      await call(context.request, "PATCH", `/api/conversations/${mine}`, { assigned_to: me.user.id });
      await expect
        .poll(shown, { timeout: 15_000 })
        .toContainEqual({ title: "Assigned to you", body: "Mo Mine" });
      await stack.customer("15550100006", "Mo Mine").text("Are you there?");
      await expect
        .poll(shown, { timeout: 15_000 })
        .toContainEqual({ title: "Mo Mine", body: "Are you there?" });
      // Someone else's conversation: nothing.
      await stack.customer("15550100007", "Nat Notmine").text("Hello from elsewhere");
      await stack.t.app.deps.jobs.drain();
      await p.waitForTimeout(1_500);
      expect((await shown()).some((n) => n.title === "Nat Notmine")).toBe(false);

      // Off: nothing more, even in my conversation, and it stays off after a reload.
      await p.getByRole("button", { name: "Notifications on (turn off)" }).click();
      await p.reload();
      await p.getByRole("button", { name: "Notifications off (turn on)" }).waitFor();
      await p.getByText("Live", { exact: true }).waitFor();
      await stack.customer("15550100006", "Mo Mine").text("Still there?");
      await stack.t.app.deps.jobs.drain();
      await p.waitForTimeout(1_500);
      expect((await shown()).some((n) => n.body === "Still there?")).toBe(false);
    } finally {
      await ctx.close();
    }
  });

  it("places an added node in view on the flow canvas, even after panning away", async () => {
    const created = (await call(context.request, "POST", "/api/flows", { template_slug: "faq_bot" })) as {
      flow: { id: string };
    };
    await page.goto(`${stack.url}/flows/${created.flow.id}`);
    await page.locator(".react-flow__node").first().waitFor();
    // Pan far to the left: the existing nodes leave the view.
    const pane = page.locator(".react-flow__pane");
    const box = await pane.boundingBox();
    if (!box) throw new Error("no canvas");
    await page.mouse.move(box.x + 40, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width - 40, box.y + box.height / 2, { steps: 5 });
    await page.mouse.up();
    const before = await page.locator(".react-flow__node").count();
    await page.getByLabel("Node type to add").selectOption("send_message");
    await page.getByRole("button", { name: "Add node" }).click();
    await expect.poll(() => page.locator(".react-flow__node").count()).toBe(before + 1);
    const added = page.locator(".react-flow__node.selected, .react-flow__node").last();
    const nodeBox = await added.boundingBox();
    const canvas = await page.locator(".react-flow").boundingBox();
    if (!nodeBox || !canvas) throw new Error("no boxes");
    // Wholly inside the visible canvas.
    expect(nodeBox.x).toBeGreaterThanOrEqual(canvas.x);
    expect(nodeBox.y).toBeGreaterThanOrEqual(canvas.y);
    expect(nodeBox.x + nodeBox.width).toBeLessThanOrEqual(canvas.x + canvas.width);
    expect(nodeBox.y + nodeBox.height).toBeLessThanOrEqual(canvas.y + canvas.height);
  });

  it("scrolls a long inbox a page at a time, with only the rows in view in the page", async () => {
    const account = ((await call(context.request, "GET", "/api/me")) as { account: { id: string } }).account
      .id;
    // 600 conversations, older than every other (they come last in the list).
    await stack.t.app.deps.db.execute(sql`
      with made as (
        insert into contacts (account_id, wa_id, name, phone)
        select ${account}::uuid, '1999' || lpad(n::text, 7, '0'), 'Bulk ' || lpad(n::text, 4, '0'), '1999' || lpad(n::text, 7, '0')
        from generate_series(1, 600) n
        returning id, name
      )
      insert into conversations (account_id, contact_id, last_message_at)
      select ${account}::uuid, id, now() - interval '30 days' - (substring(name from 6)::int * interval '1 minute') from made`);
    await page.goto(`${stack.url}/inbox`);
    await page.getByRole("link", { name: /Bulk 0001/ }).waitFor({ state: "attached", timeout: 30_000 });
    const scroller = page.locator(".conv-list");
    const rows = () => page.locator(".conv-list li.conv-row").count();
    // Down to the end: the last one comes, pages loading on the way.
    await expect
      .poll(
        async () => {
          await scroller.evaluate((el) => el.scrollTo(0, el.scrollHeight));
          return page.getByRole("link", { name: /Bulk 0600/ }).count();
        },
        { timeout: 60_000, interval: 300 },
      )
      .toBe(1);
    expect(await rows()).toBeLessThan(60);
  });

  it("lists the invitations nobody has accepted yet", async () => {
    const email = `pending-${Date.now()}@example.com`;
    await page.goto(`${stack.url}/settings/team`);
    await page.getByLabel("Their email").fill(email);
    await page.getByRole("button", { name: "Create invitation" }).click();
    const pending = page.getByRole("list", { name: "Pending invitations" });
    await pending.getByText(email).waitFor();
    // Bea accepted hers: not pending.
    expect(await pending.getByText(bea.email).count()).toBe(0);
    await page.reload();
    await pending.getByText(email).waitFor();
  });
});
