import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from "node:crypto";
import type { TokenCipher } from "../ports.js";

/** The configured key is not 64 hex characters (AES-256). Message per spec section 7. */
export class EncryptionKeyError extends Error {
  constructor() {
    super("ENCRYPTION_KEY must be a valid 64-character hex string");
    this.name = "EncryptionKeyError";
  }
}

/** A stored value that cannot be decrypted with the current key (wrong key, tampered, malformed). */
export class TokenDecryptError extends Error {
  constructor() {
    super("Stored token cannot be decrypted");
    this.name = "TokenDecryptError";
  }
}

const VERSION = "v1";

/**
 * Never throws on construction: an invalid key must not stop the server, it
 * makes each use throw EncryptionKeyError instead.
 */
export function createTokenCipher(hexKey: string): TokenCipher {
  const key = /^[0-9a-fA-F]{64}$/.test(hexKey) ? Buffer.from(hexKey, "hex") : undefined;
  const requireKey = () => {
    if (!key) throw new EncryptionKeyError();
    return key;
  };
  let lookupKey: Buffer | undefined;

  return {
    encrypt(plain) {
      const iv = randomBytes(12);
      const cipher = createCipheriv("aes-256-gcm", requireKey(), iv);
      const ciphertext = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
      const tag = cipher.getAuthTag();
      return [VERSION, iv, tag, ciphertext]
        .map((p) => (typeof p === "string" ? p : p.toString("base64url")))
        .join(":");
    },
    decrypt(stored) {
      const k = requireKey();
      const parts = stored.split(":");
      if (parts.length !== 4 || parts[0] !== VERSION) throw new TokenDecryptError();
      const [iv, tag, ciphertext] = parts.slice(1).map((p) => Buffer.from(p, "base64url"));
      if (iv?.length !== 12 || tag?.length !== 16 || !ciphertext) throw new TokenDecryptError();
      try {
        const decipher = createDecipheriv("aes-256-gcm", k, iv);
        decipher.setAuthTag(tag);
        return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString("utf8");
      } catch {
        throw new TokenDecryptError();
      }
    },
    keyedHash(value) {
      lookupKey ??= Buffer.from(
        hkdfSync("sha256", requireKey(), Buffer.alloc(0), "wa-inbox lookup hash", 32),
      );
      return createHmac("sha256", lookupKey).update(value).digest("hex");
    },
  };
}

export type { TokenCipher } from "../ports.js";
