import type { AppDeps } from "../../deps.js";
import type { TaskName, TaskPayload } from "../../queue/tasks.js";
import type { JobInfo, RunnableTask, Task } from "../types.js";
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
 * (`addJob(db, "<name>", payload)`, src/queue): one adapter per name of the
 * task registry (src/queue/tasks.ts), each a file of this folder.
 */
export const TASKS: { [N in TaskName]: Task<N> } = {
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

function runTask<N extends TaskName>(name: N, payload: TaskPayload<N>, deps: AppDeps, job: JobInfo) {
  return TASKS[name](payload, deps, job);
}

/**
 * The tasks as the worker runs them, by name. A job's payload is read back
 * from its row, which addJob wrote under the same name with the registry's
 * payload type: the one place an untyped payload is taken for its task's.
 */
export const RUNNABLE_TASKS: Record<string, RunnableTask> = Object.fromEntries(
  (Object.keys(TASKS) as TaskName[]).map((name): [string, RunnableTask] => [
    name,
    (payload, deps, job) => runTask(name, payload as TaskPayload<typeof name>, deps, job),
  ]),
);
