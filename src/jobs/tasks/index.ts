import type { Task } from "../types.js";
import { processWebhook } from "./process-webhook.js";
import { resumeWait } from "./resume-wait.js";
import { sendBotMessage } from "./send-bot-message.js";
import { sweepTimeouts } from "./sweep-timeouts.js";

/**
 * Every kind of background job, by the name jobs are added under
 * (`addJob(db, "<name>", payload)`). A task is a file of this folder.
 */
export const TASKS: Record<string, Task> = {
  "process-webhook": processWebhook,
  "resume-wait": resumeWait,
  "send-bot-message": sendBotMessage,
  "sweep-timeouts": sweepTimeouts,
};
