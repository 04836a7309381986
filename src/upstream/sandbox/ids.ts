import { randomBytes, randomInt } from "node:crypto";

/** An upstream message id in Meta's form (`wamid.` + opaque base64). */
export const newWamid = () => `wamid.${randomBytes(24).toString("base64url")}`;

/** Meta's per-request trace id, returned in every error envelope. */
export const newFbtraceId = () => `A${randomBytes(11).toString("base64url")}`;

/** A media id in Meta's form (16 digits). */
export const newMediaId = () => `${randomInt(100_000, 1_000_000)}${randomInt(1_000_000_000, 10_000_000_000)}`;
