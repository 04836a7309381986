import { randomBytes } from "node:crypto";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import type { S3Client } from "@aws-sdk/client-s3";
import type { MediaStoreConfig } from "../config.js";
import type { MediaStore } from "../ports.js";

/**
 * Where media files live. Keys are ours (`<account id>/<message id>`), never
 * a user's filename, so no key can leave its folder or bucket prefix.
 */

const SAFE_KEY = /^[A-Za-z0-9-]+(\/[A-Za-z0-9-]+)*$/;

function checkKey(key: string) {
  if (!SAFE_KEY.test(key)) throw new Error("media keys are letters, digits, dashes and slashes");
}

export function createMediaStore(config: MediaStoreConfig): MediaStore {
  return config.kind === "local" ? localMediaStore(config.dir) : s3MediaStore(config);
}

/** Files under a folder; a write goes to a temporary file first, so a reader never sees half a file. */
export function localMediaStore(dir: string): MediaStore {
  return {
    async put(key, bytes) {
      checkKey(key);
      const file = path.join(dir, key);
      await mkdir(path.dirname(file), { recursive: true });
      const temporary = `${file}.${randomBytes(6).toString("hex")}.part`;
      try {
        await writeFile(temporary, bytes, { mode: 0o600 });
        await rename(temporary, file);
      } catch (error) {
        await rm(temporary, { force: true });
        throw error;
      }
    },
    async get(key) {
      checkKey(key);
      try {
        return await readFile(path.join(dir, key));
      } catch (error) {
        if ((error as { code?: string }).code === "ENOENT") return null;
        throw error;
      }
    },
    async delete(key) {
      checkKey(key);
      await rm(path.join(dir, key), { force: true });
    },
  };
}

/**
 * An S3-compatible bucket (AWS, MinIO, R2...); a custom endpoint is addressed path-style.
 * The AWS SDK is loaded at the first use, so an instance that keeps its media
 * on disk never loads it (about 3 MB of heap and 5 MB of RSS at idle).
 */
export function s3MediaStore(config: Extract<MediaStoreConfig, { kind: "s3" }>): MediaStore {
  let loaded: Promise<{ sdk: typeof import("@aws-sdk/client-s3"); client: S3Client }> | undefined;
  const s3 = () => {
    loaded ??= import("@aws-sdk/client-s3").then((sdk) => ({
      sdk,
      client: new sdk.S3Client({
        region: config.region,
        ...(config.endpoint ? { endpoint: config.endpoint, forcePathStyle: true } : {}),
        ...(config.accessKeyId && config.secretAccessKey
          ? { credentials: { accessKeyId: config.accessKeyId, secretAccessKey: config.secretAccessKey } }
          : {}),
      }),
    }));
    return loaded;
  };
  return {
    async put(key, bytes, contentType) {
      checkKey(key);
      const { sdk, client } = await s3();
      await client.send(
        new sdk.PutObjectCommand({ Bucket: config.bucket, Key: key, Body: bytes, ContentType: contentType }),
      );
    },
    async get(key) {
      checkKey(key);
      const { sdk, client } = await s3();
      try {
        const answer = await client.send(new sdk.GetObjectCommand({ Bucket: config.bucket, Key: key }));
        if (!answer.Body) return null;
        return Buffer.from(await answer.Body.transformToByteArray());
      } catch (error) {
        if (error instanceof sdk.NoSuchKey || (error as { name?: string }).name === "NotFound") return null;
        throw error;
      }
    },
    async delete(key) {
      checkKey(key);
      const { sdk, client } = await s3();
      // S3 answers a delete of a missing key with success.
      await client.send(new sdk.DeleteObjectCommand({ Bucket: config.bucket, Key: key }));
    },
  };
}

export type { MediaStore } from "../ports.js";
