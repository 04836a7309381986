import {
  fieldEdge,
  LIMITS,
  nonBlank,
  optionalFilled,
  optionalKey,
  optionalText,
  problem,
  requireOneOf,
  stringFields,
} from "./checks.js";
import { defineNodeType } from "./types.js";

export const MEDIA_TYPES = ["image", "video", "document"] as const;

export interface SendMediaConfig {
  media_type: (typeof MEDIA_TYPES)[number];
  media_url: string;
  caption?: string;
  filename?: string;
  next_node_key?: string;
}

/** Sends an image, video or document by URL, then goes on to next_node_key. */
export const send_media = defineNodeType<SendMediaConfig>()({
  type: "send_media",
  label: "Media",
  defaultConfig: { media_type: "image", media_url: "" },
  edges: (c) => [fieldEdge(c, "next_node_key", "next")],
  validate: (c, report) => {
    requireOneOf(c, "media_type", MEDIA_TYPES, report);
    const url = c.media_url;
    if (!nonBlank(url)) report("missing_field", "media_url is required");
    else if (!/^https?:\/\/\S+$/i.test(url)) report("invalid_value", "media_url must be an http(s) URL");
    optionalText(c, "caption", LIMITS.bodyText, report);
    optionalText(c, "filename", 240, report);
    optionalKey(c, "next_node_key", report);
  },
  texts: (c) => stringFields(c, ["caption"]),
  build: (c, render) => {
    if (!nonBlank(c.media_url)) return problem("config.media_url must be a non-empty string");
    const caption = optionalFilled(c.caption, render);
    const link = { link: c.media_url, ...(caption === undefined ? {} : { caption }) };
    const text = caption ?? "";
    switch (c.media_type) {
      case "image":
        return { ok: true, message: { outbound: { type: "image", image: link }, text } };
      case "video":
        return { ok: true, message: { outbound: { type: "video", video: link }, text } };
      case "document": {
        const filename = optionalFilled(c.filename, render);
        const document = { ...link, ...(filename ? { filename } : {}) };
        return { ok: true, message: { outbound: { type: "document", document }, text } };
      }
      default:
        return problem("config.media_type must be image, video or document");
    }
  },
  afterSend: (c) => c.next_node_key,
  enter: async (_c, run) => {
    await run.send();
    return undefined;
  },
});
