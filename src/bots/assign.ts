import { and, eq, isNull, ne, sql } from "drizzle-orm";
import type { DbOrTx } from "../db/client.js";
import { conversations, profiles } from "../db/schema/index.js";
import { type AutoAssignMode, getSettings } from "../settings/settings.js";
import { pausedColumns } from "./automation.js";

/**
 * Auto-assignment (product.md section 20): a conversation that needs a person
 * goes to a member who is online and under the account's cap of open
 * conversations, by round robin (whose last assignment is oldest) or least
 * busy (fewest open, then round robin). A manual assignment is never undone.
 *
 * Every auto-assignment of an account runs under one transaction-level
 * advisory lock of that account, across instances: the counts it reads are
 * those the previous holder committed, so no member goes over the cap. The
 * lock is taken before any conversation row is touched in its transaction
 * (callers commit their own conversation changes first, or, as the runner's
 * handoff, touch only a conversation no other assigner may take).
 */
/** Returns the members given a conversation, one entry per conversation assigned. */
export async function autoAssign(
  db: DbOrTx,
  input: {
    accountId: string;
    now: Date;
    /** Only this conversation (a new message or a handoff); otherwise the oldest waiting ones. */
    conversationId?: string;
    /** A conversation not to take (one just unassigned by hand). */
    except?: string;
  },
): Promise<string[]> {
  const { autoAssign: rule } = await getSettings(db, input.accountId);
  if (rule.mode === "off") return [];
  // Most messages come to a conversation someone has: settled without the account's lock.
  if (input.conversationId && !(await nextWaiting(db, input))) return [];
  return db.transaction(async (tx) => {
    await tx.execute(
      sql`select pg_advisory_xact_lock(hashtextextended(${`auto-assign:${input.accountId}`}, 0))`,
    );
    const assigned: string[] = [];
    for (;;) {
      const conversationId = await nextWaiting(tx, input);
      if (!conversationId) break;
      const member = await pickMember(tx, input.accountId, rule);
      if (!member) break;
      const done = await tx
        .update(conversations)
        .set({ assignedTo: member, ...pausedColumns("assigned", null), updatedAt: input.now })
        .where(and(eq(conversations.id, conversationId), isNull(conversations.assignedTo)))
        .returning({ id: conversations.id });
      if (done.length === 0) break;
      await tx.update(profiles).set({ lastAssignedAt: input.now }).where(eq(profiles.userId, member));
      assigned.push(member);
      if (input.conversationId) break;
    }
    return assigned;
  });
}

/**
 * The conversation to assign: the one named, if it is unassigned and not
 * closed; otherwise the oldest unassigned, not closed conversation whose
 * customer has written and that no flow is handling.
 */
async function nextWaiting(
  tx: DbOrTx,
  input: { accountId: string; conversationId?: string; except?: string },
): Promise<string | null> {
  const open = and(
    eq(conversations.accountId, input.accountId),
    isNull(conversations.assignedTo),
    ne(conversations.status, "closed"),
  );
  if (input.conversationId) {
    const [row] = await tx
      .select({ id: conversations.id })
      .from(conversations)
      .where(and(open, eq(conversations.id, input.conversationId)));
    return row?.id ?? null;
  }
  const [row] = await tx
    .select({ id: conversations.id })
    .from(conversations)
    .where(
      and(
        open,
        sql`${conversations.customerMessageAt} is not null`,
        input.except ? ne(conversations.id, input.except) : undefined,
        sql`not exists (select 1 from flow_runs r where r.account_id = ${conversations.accountId}
                          and r.contact_id = ${conversations.contactId} and r.status = 'active')`,
      ),
    )
    .orderBy(conversations.createdAt, conversations.id)
    .limit(1);
  return row?.id ?? null;
}

/** The member next in turn who is online and under the cap, or null. */
async function pickMember(
  tx: DbOrTx,
  accountId: string,
  rule: { mode: AutoAssignMode; maxOpenPerAgent: number | null },
): Promise<string | null> {
  const { rows } = await tx.execute<{ user_id: string }>(sql`
    select p.user_id from (
      select p.user_id, p.last_assigned_at,
             (select count(*) from ${conversations} c
               where c.account_id = p.account_id and c.assigned_to = p.user_id and c.status <> 'closed') as open
        from ${profiles} p
       where p.account_id = ${accountId} and p.role is not null and p.availability = 'online') p
     where ${rule.maxOpenPerAgent === null ? sql`true` : sql`p.open < ${rule.maxOpenPerAgent}`}
     order by ${rule.mode === "least_busy" ? sql`p.open,` : sql``} p.last_assigned_at asc nulls first, p.user_id
     limit 1`);
  return rows[0]?.user_id ?? null;
}
