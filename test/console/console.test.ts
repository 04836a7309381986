import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser, BrowserContext, Page, Request } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
import { png } from "./png.js";

const chromiumFound = findChromium();
if ("missing" in chromiumFound) console.log(chromiumFound.missing);

const PNG = png(160, 100);

/** One story, in order, as an owner and then a teammate would live it. */
describe.skipIf("missing" in chromiumFound)("the web console in a real browser", { timeout: 180_000 }, () => {
  let stack: Stack;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const owner = {
    name: "Olivia Owner",
    email: `olivia-${Date.now()}@example.com`,
    password: "correct horse battery",
  };
  const customer = { waId: "15551234567", name: "Sam Customer" };
  let conversationId = "";

  /**
   * A page's API requests, in order (the event stream included), and `settled()`: until the page
   * has had no API request under way (the stream aside: it stays open) for half a second, i.e. it
   * is loaded and idle, as a user reading it would leave it.
   */
  const trackApi = (target: Page) => {
    const sent: string[] = [];
    const underWay = new Set<Request>();
    const pathOf = (request: Request) => new URL(request.url()).pathname;
    target.on("request", (request) => {
      if (!pathOf(request).startsWith("/api/")) return;
      sent.push(`${request.method()} ${pathOf(request)}`);
      if (pathOf(request) !== "/api/events/stream") underWay.add(request);
    });
    target.on("requestfinished", (request) => underWay.delete(request));
    target.on("requestfailed", (request) => underWay.delete(request));
    const settled = async (quietMs = 500) => {
      const deadline = Date.now() + 60_000;
      let quietSince = Date.now();
      while (Date.now() - quietSince < quietMs) {
        if (Date.now() > deadline)
          throw new Error(`API requests still under way: ${[...underWay].map((r) => r.url())}`);
        if (underWay.size > 0) quietSince = Date.now();
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    return { sent, settled };
  };
  let pageApi: ReturnType<typeof trackApi>;

  /**
   * The owner's session in the browser, signed in again if it has gone: a scenario that needs it
   * does not fail because an earlier one stopped half-way after signing out (that one fails alone).
   */
  const ensureSignedIn = async () => {
    if ((await context.request.get(`${stack.url}/api/me`)).ok()) return;
    const signIn = await context.request.post(`${stack.url}/api/auth/sign-in/email`, {
      data: { email: owner.email, password: owner.password },
      headers: { origin: stack.url },
    });
    expect(signIn.status()).toBe(200);
    expect((await context.request.get(`${stack.url}/api/me`)).status()).toBe(200);
  };

  const cookie = async () => (await context.cookies()).map((c) => `${c.name}=${c.value}`).join("; ");
  const shot = (name: string, target: Page = page) => screenshot(target, name);

  beforeAll(async () => {
    await ensureConsoleBuilt();
    stack = await startStack();
    browser = await launchBrowser((chromiumFound as { path: string }).path);
    ({ context, page } = await newPage(browser));
    pageApi = trackApi(page);
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await stack?.close();
  });

  it("signs up, creates an account and connects the sandbox number", async () => {
    await page.goto(`${stack.url}/`);
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    await page.getByRole("link", { name: "Create an account" }).click();
    await page.getByLabel("Your name").fill(owner.name);
    await page.getByLabel("Email").fill(owner.email);
    await page.getByLabel("Password").fill("short");
    await page.getByRole("button", { name: "Sign up" }).click();
    // A bad field is named next to the field.
    await expect(page.getByText("Use at least 8 characters").isVisible()).resolves.toBe(true);
    await page.getByLabel("Password").fill(owner.password);
    await page.getByRole("button", { name: "Sign up" }).click();

    await page.getByLabel("Business name").fill("Lumen Coffee");
    await page.getByRole("button", { name: "Create account" }).click();

    await page.getByRole("heading", { name: "WhatsApp channel" }).waitFor();
    await page.getByText("No WhatsApp number is connected yet.").waitFor();
    // A wrong token: Meta's refusal is shown, nothing is saved.
    await page.getByLabel("Phone number id").fill(NUMBER.phoneNumberId);
    await page.getByLabel("Business account id (WABA)").fill(NUMBER.businessAccountId);
    await page.getByLabel("Access token").fill("not-the-token");
    await page.getByRole("button", { name: "Save and connect" }).click();
    await page
      .getByRole("alert")
      .filter({ hasText: /token|OAuth|access/i })
      .first()
      .waitFor();

    await page.getByLabel("Access token").fill(NUMBER.accessToken);
    await page.getByLabel("Two-step PIN").fill("123456");
    await page.getByRole("button", { name: "Save and connect" }).click();
    await page.getByText("Connected. The number is registered and ready.").waitFor();
    await page.getByText("Connected", { exact: true }).waitFor();
    await page.getByText(NUMBER.verifiedName, { exact: false }).first().waitFor();
    await shot("channel-1280");
  });

  it("shows a customer's message without a reload, and the agent replies, reacts, attaches and reads", async () => {
    await page.getByRole("link", { name: "Inbox" }).click();
    await page.getByText("No conversations here").waitFor();
    // Updates come from the service's event stream (polling is only for a server without one).
    await page.getByText("Live", { exact: true }).waitFor();

    const sam = stack.customer(customer.waId, customer.name);
    expect((await sam.text("Hi! Do you ship to Lisbon?")).status).toBe(200);
    // Live: the conversation and its message appear without a reload.
    await page.getByRole("link", { name: /Sam Customer/ }).click();
    const thread = page.getByRole("list", { name: "Messages" });
    await thread.getByText("Hi! Do you ship to Lisbon?").waitFor();
    conversationId = page.url().split("/inbox/")[1] ?? "";
    expect(conversationId).toMatch(/^[0-9a-f-]{36}$/);

    // A second message arrives in the open thread.
    await sam.text("Also, is the Ethiopian roast in stock?");
    await thread.getByText("Also, is the Ethiopian roast in stock?").waitFor();

    // Reply.
    await page.getByLabel("Message", { exact: true }).fill("Yes, we ship to Lisbon in 2-3 days.");
    await page.getByRole("button", { name: "Send" }).click();
    const reply = page.locator(".bubble.out", { hasText: "Yes, we ship to Lisbon in 2-3 days." });
    await reply.waitFor();
    // Meta took it, then the phone reports it delivered: the ticks say so.
    await reply.getByRole("img", { name: "Sent" }).waitFor();
    const sent = stack.accepted.at(-1);
    expect(sent?.type).toBe("text");
    await sam.status({ messageId: sent?.messageId ?? "", status: "delivered" });
    await reply.getByRole("img", { name: "Delivered" }).waitFor();

    // React to the customer's message.
    const question = page.locator(".bubble-row", { hasText: "Hi! Do you ship to Lisbon?" });
    await question.getByRole("button", { name: "React to message" }).click();
    await question.getByRole("button", { name: "React with 👍" }).click();
    await question.locator(".reaction", { hasText: "👍" }).waitFor();
    const reactions = stack.sandbox
      .requests()
      .filter((r) => (r.body as { type?: string })?.type === "reaction");
    expect(reactions.length).toBe(1);

    // Attach an image (POST /api/conversations/{id}/media): it goes to Meta with the caption typed.
    await page.getByLabel("Message", { exact: true }).fill("Our roast, fresh today");
    await page
      .locator('input[type="file"]')
      .setInputFiles({ name: "roast.png", mimeType: "image/png", buffer: PNG });
    // Previewed first; it goes when the agent says so.
    await page.getByRole("button", { name: "Send attachment" }).click();
    const image = page
      .locator(".bubble.out", { hasText: "Our roast, fresh today" })
      .locator("img.media-image");
    await image.waitFor();
    // The picture itself loads from the service's copy (GET /api/messages/{id}/media).
    await expect.poll(() => image.evaluate((img: HTMLImageElement) => img.naturalWidth)).toBe(160);
    await expect.poll(() => stack.accepted.some((m) => m.type === "image")).toBe(true);

    // Mark read (POST /api/conversations/{id}/read): the customer's phone gets the read receipt.
    await sam.text("Thanks!");
    await thread.getByText("Thanks!").waitFor();
    await page.getByRole("button", { name: "Mark read" }).click();
    await expect
      .poll(async () =>
        stack.sandbox.requests().some((r) => (r.body as { status?: string })?.status === "read"),
      )
      .toBe(true);
    await page.locator(".unread-badge").waitFor({ state: "detached" });
    await shot("inbox-1280");
  });

  it("assigns and parks the conversation, tags the contact and answers with a canned response", async () => {
    await page.goto(`${stack.url}/inbox/${conversationId}`);
    const thread = page.getByRole("list", { name: "Messages" });
    await thread.getByText("Hi! Do you ship to Lisbon?").waitFor();

    await page.getByLabel("Assignee").selectOption({ label: `${owner.name} (me)` });
    await page.getByLabel("Status").selectOption("pending");
    await page.getByRole("button", { name: /^Pending/ }).click();
    await page.getByRole("link", { name: /Sam Customer/ }).waitFor();
    await page.getByLabel("Status").selectOption("open");
    await page.getByRole("button", { name: /^Open/ }).click();
    await page.getByRole("link", { name: /Sam Customer/ }).waitFor();

    const listed = (await (
      await fetch(`${stack.url}/api/conversations`, { headers: { cookie: await cookie() } })
    ).json()) as {
      conversations: Array<{ id: string; assigned_to: string | null; contact: { id: string } }>;
    };
    const stored = listed.conversations.find((c) => c.id === conversationId);
    expect(stored?.assigned_to).toMatch(/.+/);

    await page.getByLabel("New tag").fill("wholesale");
    await page.getByRole("button", { name: "Add", exact: true }).click();
    await page.getByRole("list", { name: "Tags" }).getByText("wholesale").waitFor();
    const contact = (await (
      await fetch(`${stack.url}/api/contacts/${stored?.contact.id}`, { headers: { cookie: await cookie() } })
    ).json()) as { contact: { tags: string[] } };
    expect(contact.contact.tags).toContain("wholesale");

    // A canned response: a refused shortcut, a good one, then "/" in the composer offers it.
    await page.getByRole("link", { name: "Settings" }).click();
    await page.getByRole("link", { name: "Canned responses" }).click();
    await page.getByLabel("Shortcut").fill("Bad Shortcut!");
    await page.getByLabel("Text").fill("We roast every Monday.");
    await page.getByRole("button", { name: "Add" }).click();
    // The refusal is shown next to the field it concerns.
    await page
      .locator(".field", { has: page.getByLabel("Shortcut") })
      .locator(".field-error")
      .waitFor();
    await page.getByLabel("Shortcut").fill("roast");
    await page.getByRole("button", { name: "Add" }).click();
    await page.getByText("/roast").waitFor();
    await page.goto(`${stack.url}/inbox/${conversationId}`);
    await page.getByLabel("Message", { exact: true }).fill("/ro");
    await page.getByRole("list", { name: "Canned responses" }).getByText("We roast every Monday.").waitFor();
    await page.getByLabel("Message", { exact: true }).press("Enter");
    await expect(page.getByLabel("Message", { exact: true }).inputValue()).resolves.toBe(
      "We roast every Monday.",
    );
    await page.getByRole("button", { name: "Send" }).click();
    await page.locator(".bubble.out", { hasText: "We roast every Monday." }).waitFor();
  });

  it("offers only templates when the customer's 24-hour window has closed, and sends one", async () => {
    // The account's templates come from Meta (here the sandbox's) by a sync.
    await page.getByRole("link", { name: "Settings" }).click();
    await page.getByRole("link", { name: "Templates" }).click();
    await page.getByRole("button", { name: "Sync from Meta" }).click();
    await page
      .getByRole("status")
      .filter({ hasText: /Synced \d+ templates/ })
      .waitFor();
    await page.getByRole("cell", { name: "order_update" }).waitFor();

    const twoDaysAgo = Math.floor(Date.now() / 1000) - 2 * 24 * 3600;
    await stack.customer("15550002222", "Old Friend").text("Hello from last week", { timestamp: twoDaysAgo });
    await page.goto(`${stack.url}/inbox`);
    await page.getByRole("link", { name: /Old Friend/ }).click();
    await page.getByText("WhatsApp only allows an approved template now").waitFor();
    expect(await page.getByLabel("Message", { exact: true }).count()).toBe(0);
    await page.getByLabel("Template", { exact: true }).selectOption({ label: "order_update (en_US)" });
    await page.getByLabel("Template parameter {{1}}").fill("Old Friend");
    await page.getByLabel("Template parameter {{2}}").fill("#2001");
    await page.getByRole("button", { name: "Send template" }).click();
    await page.locator(".bubble.out", { hasText: "Template" }).waitFor();
    await expect.poll(() => stack.accepted.at(-1)?.type).toBe("template");
  });

  it("builds a flow from a template on the canvas, fixes an activation issue and sees the run's events", async () => {
    await page.getByRole("link", { name: "Flows" }).click();
    await page.getByRole("button", { name: "New flow" }).click();
    await page.getByRole("button", { name: /Use template Welcome menu/i }).click();
    await page.locator(".react-flow__node").first().waitFor();
    await page.locator('.react-flow__node[data-id="menu"]').waitFor();

    // A new message node, wired between start and the menu by drawing edges on the canvas.
    await page.getByLabel("Node type to add").selectOption("send_message");
    await page.getByRole("button", { name: "Add node" }).click();
    const added = page.locator('.react-flow__node[data-id="send_message_1"]');
    await added.waitFor();
    // In view, and on no other node (it used to land on the menu, hiding it).
    const canvas = await page.getByRole("region", { name: "Flow canvas" }).boundingBox();
    const placed = await added.boundingBox();
    if (!canvas || !placed) throw new Error("the canvas or the new node is not on screen");
    expect(placed.x).toBeGreaterThanOrEqual(canvas.x);
    expect(placed.y).toBeGreaterThanOrEqual(canvas.y);
    expect(placed.x + placed.width).toBeLessThanOrEqual(canvas.x + canvas.width);
    expect(placed.y + placed.height).toBeLessThanOrEqual(canvas.y + canvas.height);
    for (const other of await page.locator('.react-flow__node:not([data-id="send_message_1"])').all()) {
      const box = await other.boundingBox();
      if (!box) continue;
      const apart =
        placed.x + placed.width <= box.x ||
        box.x + box.width <= placed.x ||
        placed.y + placed.height <= box.y ||
        box.y + box.height <= placed.y;
      expect(apart, `the new node lies on ${await other.getAttribute("data-id")}`).toBe(true);
    }
    await page.getByRole("button", { name: "Fit View" }).click();
    await page
      .locator('.react-flow__node[data-id="start"] .react-flow__handle.source')
      .dragTo(added.locator(".react-flow__handle.target"));
    await added
      .locator(".react-flow__handle.source")
      .dragTo(page.locator('.react-flow__node[data-id="menu"] .react-flow__handle.target'));
    await page.locator('.react-flow__edge[data-id="start:next_node_key"]').waitFor();
    await expect
      .poll(() =>
        page.locator(".react-flow__edge").evaluateAll((edges) => edges.map((e) => e.getAttribute("data-id"))),
      )
      .toContain("send_message_1:next_node_key");

    // Undo takes the last edge away; the same drag puts it back.
    await page.getByRole("button", { name: "Undo" }).click();
    await page
      .locator('.react-flow__edge[data-id="send_message_1:next_node_key"]')
      .waitFor({ state: "detached" });
    await added
      .locator(".react-flow__handle.source")
      .dragTo(page.locator('.react-flow__node[data-id="menu"] .react-flow__handle.target'));
    await page.locator('.react-flow__edge[data-id="send_message_1:next_node_key"]').waitFor();

    // The new node has no text: activation names the problem on the node itself.
    await page.getByRole("button", { name: "Activate" }).click();
    await added.locator(".flow-node-issues li.error").first().waitFor();
    await added.locator(".flow-node.has-error").waitFor();
    await shot("canvas-1280");

    // Fix it in the inspector, by keyboard: pick the node, type the text.
    await page.getByLabel("Node", { exact: true }).selectOption("send_message_1");
    await page.getByLabel("Message text").fill("Welcome to Lumen Coffee, {{contact.name}}!");
    await page.getByRole("button", { name: "Activate" }).click();
    await page.getByText("Active: customers can trigger this flow now").waitFor();
    await added.locator(".flow-node-issues").waitFor({ state: "detached" });

    // Dragging a node moves it for good once saved.
    const flowId = new URL(page.url()).pathname.split("/")[2] ?? "";
    const storedY = async () => {
      const response = await fetch(`${stack.url}/api/flows/${flowId}`, {
        headers: { cookie: await cookie() },
      });
      const flow = (await response.json()) as { nodes: Array<{ node_key: string; position_y: number }> };
      return flow.nodes.find((n) => n.node_key === "send_message_1")?.position_y ?? Number.NaN;
    };
    const beforeY = await storedY();
    expect(beforeY, "the new node was saved by the activation").not.toBeNaN();
    const box = await added.boundingBox();
    if (!box) throw new Error("the new node is not on screen");
    await page.mouse.move(box.x + box.width / 2, box.y + 12);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width / 2 + 60, box.y + 12 + 90, { steps: 8 });
    await page.mouse.up();
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await page.getByRole("button", { name: "Saved", exact: true }).waitFor();
    // 90 px down on screen (the view is fitted, so a little less or more in the flow's units).
    expect(await storedY()).toBeGreaterThan(beforeY + 40);

    // A template node picks one of the synced approved templates and asks for its body parameters.
    await page.getByLabel("Node type to add").selectOption("send_template");
    await page.getByRole("button", { name: "Add node" }).click();
    const templateNode = page.locator('.react-flow__node[data-id="send_template_1"]');
    await templateNode.waitFor();
    await page.getByLabel("Node", { exact: true }).selectOption("send_template_1");
    await page.getByLabel("Approved template").selectOption({ label: "order_update (en_US)" });
    await page.getByLabel("Body parameter {{1}}").fill("{{contact.name}}");
    await page.getByLabel("Body parameter {{2}}").waitFor();
    await templateNode.getByText("order_update (en_US)").waitFor();
    await templateNode.getByLabel("next of send_template_1").waitFor();
    await page.getByRole("button", { name: "Delete node" }).click();
    await templateNode.waitFor({ state: "detached" });

    // The customer triggers it; the run and its events show up.
    await stack.customer("15559876543", "Lena").text("hi there");
    await page.getByRole("link", { name: "Runs" }).click();
    await page.locator(".run-item").first().click();
    const events = page.getByRole("list", { name: "Events" });
    await events.getByText("started", { exact: true }).waitFor();
    await events.locator(".ev-message_sent", { hasText: "send_message_1" }).waitFor();
    await events.locator(".ev-message_sent", { hasText: "menu" }).waitFor();
    // The bot's messages are in the conversation, marked as the bot's.
    await page.getByRole("link", { name: "Open in the inbox" }).click();
    await page
      .locator(".bubble.bot", { hasText: "Welcome to Lumen Coffee, Lena!" })
      .getByText("Bot", { exact: true })
      .waitFor();
  });

  it("lets the owner create an API key and a webhook endpoint, each secret shown once, and test it", async () => {
    // A receiver for the account's webhooks, on this machine.
    const received: Array<{ headers: Record<string, unknown>; body: string }> = [];
    const receiver = createServer((request, response) => {
      let body = "";
      request.on("data", (chunk) => {
        body += chunk;
      });
      request.on("end", () => {
        received.push({ headers: request.headers, body });
        response.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
    try {
      await page.getByRole("link", { name: "Settings" }).click();
      const sections = page.getByRole("navigation", { name: "Settings sections" });
      await sections.getByRole("link", { name: "API keys" }).click();
      await page.getByLabel("Name").fill("Zapier");
      await page.getByRole("button", { name: "Create key" }).click();
      const key = await page.getByLabel("New API key").inputValue();
      expect(key.length).toBeGreaterThan(20);
      // The key works as a Bearer token, and the list shows only its first characters.
      const viaKey = await fetch(`${stack.url}/api/conversations`, {
        headers: { authorization: `Bearer ${key}` },
      });
      expect(viaKey.status).toBe(200);
      await page.getByRole("button", { name: "Revoke Zapier" }).waitFor();
      expect(await page.locator(".item-list").getByText(key).count()).toBe(0);

      await sections.getByRole("link", { name: "Webhooks" }).click();
      await page.getByLabel("URL").fill(hookUrl);
      await page.getByRole("button", { name: "Add endpoint" }).click();
      expect(await page.getByLabel("Signing secret").inputValue()).toMatch(/^whsec_/);
      await page.getByText(hookUrl).waitFor();
      await page.getByRole("button", { name: "Send test" }).click();
      await page
        .getByRole("list", { name: `Deliveries to ${hookUrl}` })
        .getByText("delivered")
        .waitFor();
      expect(received.length).toBeGreaterThanOrEqual(1);
      expect(received[0]?.headers["webhook-signature"]).toMatch(/^v1,/);
    } finally {
      await new Promise((resolve) => receiver.close(resolve));
    }
  });

  it("hides owner-only settings from a member, who joins through an invitation", async () => {
    const member = { name: "Mia Member", email: `mia-${Date.now()}@example.com` };
    await page.getByRole("link", { name: "Settings" }).click();
    await page.getByLabel("Their email").fill(member.email);
    await page.getByRole("button", { name: "Create invitation" }).click();
    const link = await page.getByLabel("Invitation link").inputValue();
    expect(link).toContain(`${stack.url}/invite/`);

    const second = await newPage(browser);
    try {
      const p = second.page;
      await p.goto(link);
      // Signed out: sign-in first, then back to the invitation.
      await p.getByRole("heading", { name: "Sign in" }).waitFor();
      await p.getByRole("link", { name: "Create an account" }).click();
      await p.getByLabel("Your name").fill(member.name);
      await p.getByLabel("Email").fill(member.email);
      await p.getByLabel("Password").fill("another long password");
      await p.getByRole("button", { name: "Sign up" }).click();
      await p.getByRole("button", { name: "Accept invitation" }).waitFor();
      // The owner's link needs a verified email (the mailed link does not: test/mail).
      await stack.t.database.pool.query("update users set email_verified = true where email = $1", [
        member.email,
      ]);
      await p.getByRole("button", { name: "Accept invitation" }).click();
      await p.getByRole("heading", { name: "Inbox" }).waitFor();
      // The teammate shares the inbox.
      await p.getByRole("link", { name: /Sam Customer/ }).waitFor();

      await p.getByRole("link", { name: "Settings" }).click();
      const sections = p.getByRole("navigation", { name: "Settings sections" });
      await sections.getByRole("link", { name: "Team" }).waitFor();
      await sections.getByRole("link", { name: "Canned responses" }).waitFor();
      expect(await sections.getByRole("link", { name: "API keys" }).count()).toBe(0);
      expect(await sections.getByRole("link", { name: "Webhooks" }).count()).toBe(0);
      await p.locator(".member-list").getByText(member.name).waitFor();
      expect(await p.getByLabel("Their email").count()).toBe(0);

      // An owner-only page opened directly shows what a member may see instead.
      await p.goto(`${stack.url}/settings/api-keys`);
      await p.getByRole("heading", { name: /Members of/ }).waitFor();
      expect(await p.getByRole("heading", { name: "New API key" }).count()).toBe(0);
    } finally {
      await second.context.close();
    }
  });

  it("answers a conversation by keyboard alone, with the focus always visible", async () => {
    await page.goto(`${stack.url}/inbox`);
    const link = page.getByRole("link", { name: /Sam Customer/ });
    await link.focus();
    await page.keyboard.press("Enter");
    await page.getByRole("list", { name: "Messages" }).getByText("Hi! Do you ship to Lisbon?").waitFor();
    const message = page.getByLabel("Message", { exact: true });
    for (let i = 0; i < 40 && !(await message.evaluate((el) => el === document.activeElement)); i++) {
      await page.keyboard.press("Tab");
      const outline = await page.evaluate(() => {
        const el = document.activeElement as HTMLElement | null;
        if (!el || el === document.body) return "none";
        const style = getComputedStyle(el);
        return `${style.outlineStyle} ${style.outlineWidth}`;
      });
      expect(outline).not.toMatch(/^none|0px$/);
    }
    await page.keyboard.type("Typed without a mouse.");
    await page.keyboard.press("Enter");
    await page.locator(".bubble.out", { hasText: "Typed without a mouse." }).waitFor();
  });

  it("sends an expired session to sign-in and back to the page it was on", async () => {
    await ensureSignedIn();
    await page.goto(`${stack.url}/flows`);
    await page.getByRole("heading", { name: "Flows" }).waitFor();
    // The page is loaded and idle: live updates are on and the refresh that comes with the
    // stream's first connection has been answered. (Cookies cleared while that refresh is still
    // to come make it answer 401: the user is rightly sent to sign-in from /flows, before the
    // click below, which then waits for a Channel link that is gone. That was the flake.)
    await page.getByText("Live", { exact: true }).waitFor();
    await pageApi.settled();
    const sentBefore = pageApi.sent.length;
    await context.clearCookies();
    await page.getByRole("link", { name: "Channel" }).click();
    const signInHeading = page.getByRole("heading", { name: "Sign in" });
    await signInHeading.waitFor();
    expect(new URL(page.url()).searchParams.get("next")).toBe("/channel");
    // One clean trip: the sign-in page stays put and the console stops asking the service
    // (a redirect or reconnection loop re-renders the form and sends hundreds of requests).
    const heading = await signInHeading.elementHandle();
    await page.waitForTimeout(2_000);
    expect(await heading?.evaluate((el) => el.isConnected)).toBe(true);
    expect(new URL(page.url()).searchParams.get("next")).toBe("/channel");
    const sentAfter = pageApi.sent.slice(sentBefore);
    expect(
      sentAfter.length,
      `requests after the cookies went: ${sentAfter.slice(0, 10).join(", ")} …`,
    ).toBeLessThanOrEqual(5);
    // Signing up again with a taken email opens nothing and says to sign in.
    await page.getByRole("link", { name: "Create an account" }).click();
    await page.getByLabel("Your name").fill("Someone Else");
    await page.getByLabel("Email").fill(owner.email);
    await page.getByLabel("Password").fill("a different password");
    await page.getByRole("button", { name: "Sign up" }).click();
    await page.getByText("this email already has a login with another password. Sign in instead.").waitFor();
    await page.getByRole("link", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    await page.getByLabel("Email").fill(owner.email);
    await page.getByLabel("Password").fill("wrong password!");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("alert").waitFor();
    await page.getByLabel("Password").fill(owner.password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "WhatsApp channel" }).waitFor();
    expect(new URL(page.url()).pathname).toBe("/channel");
  });

  it("sends an idle page to sign-in when its live updates are refused, the session having ended", async () => {
    await ensureSignedIn();
    // Another window of the owner's, whose cookies alone go (the session stays for the others).
    const other = await newPage(browser);
    try {
      await other.context.addCookies(await context.cookies());
      const p = other.page;
      const api = trackApi(p);
      // The first stream ends at once (as when the service restarts); the reconnection is
      // let through once the cookies are gone, to be refused.
      let streams = 0;
      let cookiesGone: () => void = () => {};
      const gone = new Promise<void>((resolve) => {
        cookiesGone = resolve;
      });
      await p.route("**/api/events/stream", async (route) => {
        streams++;
        if (streams === 1)
          return route.fulfill({
            status: 200,
            headers: { "content-type": "text/event-stream" },
            body: `id: 1\nevent: ping\ndata: {"type":"ping","data":{}}\n\n`,
          });
        if (streams === 2) await gone;
        return route.continue();
      });
      await p.goto(`${stack.url}/flows`);
      await p.getByRole("heading", { name: "Flows" }).waitFor();
      await expect.poll(() => streams).toBe(2);
      await api.settled();
      await other.context.clearCookies();
      cookiesGone();
      // No click: the refused stream alone shows sign-in, to come back to the same page.
      await p.getByRole("heading", { name: "Sign in" }).waitFor();
      expect(new URL(p.url()).searchParams.get("next")).toBe("/flows");
    } finally {
      await other.context.close();
    }
  });

  it("shows a banner while the service restarts, then catches up without a reload", async () => {
    await ensureSignedIn();
    await page.goto(`${stack.url}/inbox/${conversationId}`);
    const thread = page.getByRole("list", { name: "Messages" });
    await thread.getByText("Hi! Do you ship to Lisbon?").waitFor();
    await stack.stop();
    await page.getByText("Connection to the service lost. Retrying…").waitFor();
    await stack.start();
    await stack.customer(customer.waId, customer.name).text("Are you open on Sundays?");
    await thread.getByText("Are you open on Sundays?").waitFor();
    await page.getByText("Connection to the service lost").waitFor({ state: "detached" });
    expect(page.url()).toBe(`${stack.url}/inbox/${conversationId}`);
  });

  it("follows the event stream: an event refreshes the thread, a reconnection resumes with Last-Event-ID", async () => {
    // The stream is played by the browser's network layer, so this runs whether or not the
    // server has GET /api/events/stream yet.
    await ensureSignedIn();
    const live = await context.newPage();
    const seen: Array<string | undefined> = [];
    let release: (() => void) | undefined;
    const second = new Promise<void>((resolve) => {
      release = resolve;
    });
    const event = (id: string, type: string, data: object) =>
      `id: ${id}\nevent: ${type}\ndata: ${JSON.stringify({ id, type, created_at: new Date().toISOString(), data })}\n\n`;
    await live.route("**/api/events/stream", async (route) => {
      seen.push(route.request().headers()["last-event-id"]);
      if (seen.length === 1) {
        await route.fulfill({
          status: 200,
          headers: { "content-type": "text/event-stream", "cache-control": "no-cache" },
          body: `: connected\n\n${event("17", "conversation.updated", { id: conversationId })}`,
        });
      } else if (seen.length === 2) {
        await second;
        await route.fulfill({
          status: 200,
          headers: { "content-type": "text/event-stream" },
          body: event("18", "message.received", { conversation_id: conversationId }),
        });
      }
      // Later reconnections stay open until the page closes.
    });
    try {
      await live.goto(`${stack.url}/inbox/${conversationId}`);
      const thread = live.getByRole("list", { name: "Messages" });
      await thread.getByText("Hi! Do you ship to Lisbon?").waitFor();
      await live.getByText("Live", { exact: true }).waitFor();
      // The first stream ended after event 17: the reconnection asks to resume after it.
      await expect.poll(() => seen.length).toBeGreaterThanOrEqual(2);
      expect(seen[0]).toBeUndefined();
      expect(seen[1]).toBe("17");

      // No polling while the stream is up: a stored message shows only when its event arrives.
      await stack.customer(customer.waId, customer.name).text("Can I pick it up myself?");
      await stack.t.app.deps.jobs.drain();
      expect(await thread.getByText("Can I pick it up myself?").count()).toBe(0);
      release?.();
      await thread.getByText("Can I pick it up myself?").waitFor();
      await expect.poll(() => seen.length).toBeGreaterThanOrEqual(3);
      expect(seen[2]).toBe("18");
    } finally {
      await live.close();
    }
  });

  it("lays the inbox, the canvas and the channel out for a 390 px phone", async () => {
    await ensureSignedIn();
    const phone = await newPage(browser, 390, 844);
    try {
      await phone.context.addCookies(await context.cookies());
      const p = phone.page;
      await p.goto(`${stack.url}/inbox`);
      await p.getByRole("link", { name: /Sam Customer/ }).click();
      await p.getByRole("list", { name: "Messages" }).getByText("Hi! Do you ship to Lisbon?").waitFor();
      // One pane at a time: the list hides while a conversation is open.
      expect(await p.locator(".inbox-list").isVisible()).toBe(false);
      await p.getByLabel("Message", { exact: true }).waitFor();
      await shot("inbox-390", p);
      await p.getByRole("link", { name: "Back to conversations" }).click();
      await p.locator(".inbox-list").waitFor();

      await p.getByRole("link", { name: "Flows" }).click();
      await p.getByRole("link", { name: "Welcome menu", exact: true }).click();
      await p.locator(".react-flow__node").first().waitFor();
      await p.locator("#main").evaluate((main) => main.scrollTo(0, 0));
      await shot("canvas-390", p);

      await p.getByRole("link", { name: "Channel" }).click();
      await p.getByText("Connected", { exact: true }).waitFor();
      await shot("channel-390", p);
      // Nothing overflows the phone's width.
      const overflow = await p.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(overflow).toBeLessThanOrEqual(0);
    } finally {
      await phone.context.close();
    }
  });
});
