import { messages } from "../db/schema/index.js";
import type { AppDeps } from "../deps.js";
import { toMessageJson } from "./json.js";
import { nextMessageTime, touchConversation } from "./threads.js";

/**
 * An agents' internal note in a conversation: a message of type `note`,
 * direction `internal` and status `stored`, listed in the thread with the
 * others and never sent upstream.
 */
export async function addNote(
  deps: Pick<AppDeps, "db" | "now">,
  input: { accountId: string; userId: string; conversationId: string; text: string },
) {
  const createdAt = nextMessageTime(deps.now());
  return deps.db.transaction(async (tx) => {
    const [row] = await tx
      .insert(messages)
      .values({
        accountId: input.accountId,
        conversationId: input.conversationId,
        direction: "internal",
        senderType: "agent",
        senderUserId: input.userId,
        type: "note",
        text: input.text,
        status: "stored",
        createdAt,
        updatedAt: createdAt,
      })
      .returning();
    await touchConversation(tx, { conversationId: input.conversationId, at: createdAt });
    return toMessageJson(row!);
  });
}
