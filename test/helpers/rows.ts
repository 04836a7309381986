import { randomBytes } from "node:crypto";
import { contacts, conversations, messages, messagingConfigs } from "../../src/db/schema/index.js";
import type { TestApp } from "./harness.js";

/**
 * Rows written straight to the database, for tests of one feature that need
 * another feature's data (a stored message to react to, say) without driving
 * that feature's endpoints.
 */

export const uniqueDigits = (length = 12) => Array.from(randomBytes(length), (b) => String(b % 10)).join("");

/** A saved channel configuration, tokens encrypted with the app's key. */
export async function insertChannelConfig(
  t: TestApp,
  input: {
    accountId: string;
    userId: string;
    phoneNumberId?: string;
    accessToken?: string;
    verifyToken?: string | null;
    businessAccountId?: string | null;
  },
) {
  const { cipher } = t.app.deps;
  const accessToken = input.accessToken ?? `EAAG${randomBytes(12).toString("hex")}`;
  const verifyToken =
    input.verifyToken === undefined ? `verify-${randomBytes(6).toString("hex")}` : input.verifyToken;
  const [row] = await t.database.db
    .insert(messagingConfigs)
    .values({
      accountId: input.accountId,
      userId: input.userId,
      phoneNumberId: input.phoneNumberId ?? uniqueDigits(15),
      businessAccountId: input.businessAccountId ?? null,
      accessToken: cipher.encrypt(accessToken),
      verifyToken: verifyToken ? cipher.encrypt(verifyToken) : null,
      verifyTokenHash: verifyToken ? cipher.keyedHash(verifyToken) : null,
      status: "connected",
      connectedAt: new Date(),
    })
    .returning();
  return { row: row!, accessToken, verifyToken };
}

/**
 * A contact with its conversation. The customer last wrote `customerWroteAt`
 * (default: now, so the 24-hour window is open; null: never).
 */
export async function insertContact(
  t: TestApp,
  input: {
    accountId: string;
    waId?: string;
    name?: string | null;
    phone?: string | null;
    customerWroteAt?: Date | null;
  },
) {
  const waId = input.waId ?? uniqueDigits(11);
  const [contact] = await t.database.db
    .insert(contacts)
    .values({
      accountId: input.accountId,
      waId,
      name: input.name === undefined ? "Customer" : input.name,
      phone: input.phone === undefined ? waId : input.phone,
    })
    .returning();
  const [conversation] = await t.database.db
    .insert(conversations)
    .values({
      accountId: input.accountId,
      contactId: contact!.id,
      customerMessageAt: input.customerWroteAt === undefined ? new Date() : input.customerWroteAt,
    })
    .returning();
  return { contact: contact!, conversation: conversation! };
}

/** A stored message; inbound from the customer unless said otherwise. */
export async function insertMessage(
  t: TestApp,
  input: {
    accountId: string;
    conversationId: string;
    /** Upstream id; null for a message never sent upstream. Defaults to a fresh wamid. */
    messageId?: string | null;
    direction?: "inbound" | "outbound";
    text?: string;
  },
) {
  const direction = input.direction ?? "inbound";
  const [message] = await t.database.db
    .insert(messages)
    .values({
      accountId: input.accountId,
      conversationId: input.conversationId,
      messageId:
        input.messageId === undefined ? `wamid.${randomBytes(16).toString("base64url")}` : input.messageId,
      direction,
      senderType: direction === "inbound" ? "customer" : "agent",
      type: "text",
      text: input.text ?? "Hello",
      status: direction === "inbound" ? "received" : input.messageId === null ? "failed" : "sent",
    })
    .returning();
  return message!;
}
