import type { Task } from "../types.js";
import { campaignEvent } from "./campaign-event.js";
import { campaignSend } from "./campaign-send.js";
import { deliverWebhook } from "./deliver-webhook.js";
import { downloadMedia } from "./download-media.js";
import { eraseMedia } from "./erase-media.js";
import { importContacts } from "./import-contacts.js";
import { processWebhook } from "./process-webhook.js";
import { purgeEvents } from "./purge-events.js";
import { resumeWait } from "./resume-wait.js";
import { sendBotMessage, settleSendTask } from "./send-bot-message.js";
import { sendMail } from "./send-mail.js";
import { sweepTimeouts } from "./sweep-timeouts.js";

/**
 * Every kind of background job, by the name jobs are added under
 * (`addJob(db, "<name>", payload)`). A task is a file of this folder.
 */
export const TASKS: Record<string, Task> = {
  "campaign-event": campaignEvent,
  "campaign-send": campaignSend,
  "deliver-webhook": deliverWebhook,
  "download-media": downloadMedia,
  "erase-media": eraseMedia,
  "import-contacts": importContacts,
  "process-webhook": processWebhook,
  "purge-events": purgeEvents,
  "resume-wait": resumeWait,
  "send-bot-message": sendBotMessage,
  "send-message": sendBotMessage,
  "settle-send": settleSendTask,
  "send-mail": sendMail,
  "sweep-timeouts": sweepTimeouts,
};
