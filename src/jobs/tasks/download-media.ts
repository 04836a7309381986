import { downloadMessageMedia } from "../../media/download.js";
import type { Task } from "../types.js";

/** Fetches and keeps the file of one inbound media message (see downloadMessageMedia). */
export const downloadMedia: Task<"download-media"> = async (payload, deps, job) => {
  if (typeof payload.message_id !== "string") throw new Error("download-media needs a message_id");
  await downloadMessageMedia(deps, { messageId: payload.message_id }, job);
};
