import type { MessageStatus } from "../db/schema/inbox.js";
import type { UpstreamStatus } from "./webhook-payload.js";

/**
 * The statuses an outbound message may be in for an upstream status update
 * to apply. Statuses only move forward: pending < sent < delivered < read,
 * since Meta does not promise to deliver the callbacks in order. `failed`
 * ends the message's progress, except that a message already read stays read:
 * the customer has seen it, whatever Meta reports later.
 */
export const STATUS_PREDECESSORS: Record<UpstreamStatus, MessageStatus[]> = {
  sent: ["pending"],
  delivered: ["pending", "sent"],
  read: ["pending", "sent", "delivered"],
  failed: ["pending", "sent", "delivered"],
};

export const canAdvance = (from: MessageStatus, to: UpstreamStatus) => STATUS_PREDECESSORS[to].includes(from);
