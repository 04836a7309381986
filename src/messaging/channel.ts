import { eq } from "drizzle-orm";
import { messagingConfigs } from "../db/schema/index.js";
import type { AppDeps } from "../deps.js";
import { ApiError } from "../http/errors.js";

export interface Channel {
  phoneNumberId: string;
  businessAccountId: string | null;
  /** The decrypted access token: for upstream calls only, never for an answer or a log line. */
  token: string;
}

/** The account's channel with its token decrypted; 400 when none is configured. */
export async function channelFor(deps: Pick<AppDeps, "db" | "cipher">, accountId: string): Promise<Channel> {
  const [config] = await deps.db
    .select({
      phoneNumberId: messagingConfigs.phoneNumberId,
      businessAccountId: messagingConfigs.businessAccountId,
      accessToken: messagingConfigs.accessToken,
    })
    .from(messagingConfigs)
    .where(eq(messagingConfigs.accountId, accountId));
  if (!config) throw new ApiError(400, "The messaging channel is not configured for this account");
  let token: string;
  try {
    token = deps.cipher.decrypt(config.accessToken);
  } catch {
    throw new ApiError(500, "The stored access token cannot be decrypted: reconnect the messaging channel");
  }
  return { phoneNumberId: config.phoneNumberId, businessAccountId: config.businessAccountId, token };
}
