/**
 * Who is behind a request: a signed-in user with the account their profile
 * links to, or an API key acting for its account with member rights (then
 * `userId` is the owner who created the key and `apiKeyId` is set).
 */

export type { Caller } from "../ports.js";
