import { applyCampaignWebhook, pauseCampaignsForTemplates } from "../../campaigns/webhook.js";
import { pgErrorCode } from "../../db/errors.js";
import { offerInboundMessage } from "../../flows/runner/dispatch.js";
import { applyConsentKeyword } from "../../inbound/consent.js";
import { applyTemplateUpdates, storeChange } from "../../inbound/webhook-store.js";
import { readWebhookBatch } from "../../messaging/webhook-payload.js";
import type { Task } from "../types.js";

/**
 * One signed delivery from Meta, acknowledged already: stores each change in
 * its own transaction, then offers the customer messages to the flow runner.
 * Safe to run again after a crash: messages are stored once per upstream id,
 * and the runner's receipts keep a message from acting twice. A change that
 * cannot be stored makes the job fail after the others are done, and it runs
 * again later (the stored ones are found, not stored twice).
 */
export const processWebhook: Task<"process-webhook"> = async (payload, deps) => {
  const { db, log } = deps;
  const batch = readWebhookBatch(payload.delivery);
  for (const problem of batch.problems) log.warn({ problem }, "webhook part skipped");
  await applyTemplateUpdates(db, batch.templateUpdates, deps.now());
  await pauseCampaignsForTemplates(db, batch.templateUpdates);

  let failed = 0;
  for (const change of batch.changes) {
    try {
      const result = await storeChange(db, { change, now: deps.now });
      if (result.unknownNumber) {
        log.info({ at: change.at }, "webhook change for an unknown phone number ignored");
        continue;
      }
      for (const note of result.notes) log.info({ at: change.at, note }, "webhook part skipped");
      await applyCampaignWebhook(db, {
        phoneNumberId: change.phoneNumberId,
        statuses: change.statuses,
        inbound: result.inbound,
      });
      for (const message of result.inbound) {
        // A STOP / START keyword changes the contact's consent and starts no flow.
        if (await applyConsentKeyword(deps, message)) continue;
        await offerInboundMessage(deps, message);
      }
    } catch (error) {
      failed += 1;
      // Only the code and text: the query parameters hold customer messages.
      const cause = (error as { cause?: unknown }).cause ?? error;
      log.error(
        { at: change.at, code: pgErrorCode(error), reason: (cause as Error).message },
        "webhook change could not be processed",
      );
    }
  }
  if (failed > 0)
    throw new Error(`${failed} change(s) of the delivery could not be processed; trying again later`);
};
