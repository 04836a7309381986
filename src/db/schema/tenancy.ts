import { index, pgTable, text, uuid } from "drizzle-orm/pg-core";
import { users } from "./auth.js";
import { timestamptz } from "./columns.js";

export const accounts = pgTable("accounts", {
  id: uuid("id").primaryKey().defaultRandom(),
  name: text("name").notNull(),
  createdAt: timestamptz("created_at").notNull().defaultNow(),
});

export const profiles = pgTable(
  "profiles",
  {
    userId: uuid("user_id")
      .primaryKey()
      .references(() => users.id, { onDelete: "cascade" }),
    accountId: uuid("account_id").references(() => accounts.id, { onDelete: "set null" }),
    role: text("role", { enum: ["owner", "member"] }),
    // Auto-assignment gives conversations only to members who are online.
    availability: text("availability", { enum: ["online", "away"] })
      .notNull()
      .default("online"),
    // When auto-assignment last gave this member a conversation (round robin's turn).
    lastAssignedAt: timestamptz("last_assigned_at"),
    createdAt: timestamptz("created_at").notNull().defaultNow(),
    updatedAt: timestamptz("updated_at").notNull().defaultNow(),
  },
  (t) => [index("profiles_account_id_idx").on(t.accountId)],
);

export const accountInvitations = pgTable(
  "account_invitations",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    accountId: uuid("account_id")
      .notNull()
      .references(() => accounts.id, { onDelete: "cascade" }),
    // Lower-cased; only the user with this email can accept the invitation.
    email: text("email").notNull(),
    // SHA-256 of the token answered to the owner who invites; the token itself is never stored.
    tokenHash: text("token_hash").notNull().unique(),
    // SHA-256 of the token that only the invitation mail carries: using it proves the mailbox.
    // Null for invitations made before invitations were emailed.
    mailboxTokenHash: text("mailbox_token_hash").unique(),
    invitedBy: uuid("invited_by")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    expiresAt: timestamptz("expires_at").notNull(),
    acceptedAt: timestamptz("accepted_at"),
    acceptedBy: uuid("accepted_by").references(() => users.id, { onDelete: "set null" }),
    createdAt: timestamptz("created_at").notNull().defaultNow(),
  },
  (t) => [index("account_invitations_account_id_idx").on(t.accountId)],
);
