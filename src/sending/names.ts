/** Job names of the send pipeline (a module of its own: the runner and the pipeline both need them). */
export const SEND_BOT_MESSAGE_TASK = "send-bot-message";
/** Sends a stored outbound message that belongs to no run (campaigns: see enqueueCampaignSend). */
export const SEND_MESSAGE_TASK = "send-message";
export const SETTLE_SEND_TASK = "settle-send";
