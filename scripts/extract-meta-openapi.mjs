#!/usr/bin/env node
/**
 * Extracts from Meta's OpenAPI description of the WhatsApp Business
 * Messaging API the few parts the tests check requests, answers and webhook
 * bodies against, into test/fixtures/meta-openapi/meta-openapi-subset.json,
 * so that the tests run in a plain clone.
 *
 *   node scripts/extract-meta-openapi.mjs path/to/meta-business-messaging-api_v23.0.yaml
 *
 * The source file is Meta's published description (see the fixture folder's
 * README for where it comes from). Every `$ref` a kept part uses is kept too;
 * response headers are left out.
 */
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const source = process.argv[2];
if (!source) {
  console.error(
    "usage: node scripts/extract-meta-openapi.mjs <path to meta-business-messaging-api_v23.0.yaml>",
  );
  process.exit(2);
}
const target = path.join(root, "test", "fixtures", "meta-openapi", "meta-openapi-subset.json");

/** path -> methods kept whole (request and answers); `examples` narrows request examples by name. */
const KEEP = {
  "/{Version}/{Phone-Number-ID}/register": { post: {} },
  "/{Version}/{WABA-ID}/subscribed_apps": { post: {} },
  "/{Version}/{Phone-Number-ID}/media": { post: {} },
  "/{Version}/{Media-ID}": { get: {} },
  "/{Version}/{WABA-ID}/message_templates": { get: {} },
  "/{Version}/{Phone-Number-ID}/messages": {
    post: {
      requestOnly: true,
      examples: [
        "Send Text Message",
        "Send Image Message by ID",
        "Send Document Message by ID",
        "Send Audio Message by ID",
        "Send Message Template Text",
        "Send typing indicator and read receipt",
      ],
    },
  },
  "/whatsapp/webhooks": {
    post: {
      requestOnly: true,
      examples: [
        "Text Message",
        "Image Message",
        "Reaction Message",
        "Interactive Button Reply Message",
        "Interactive List Reply Message",
      ],
    },
  },
};
const SCHEMAS = ["StatusMessageValue"];

const doc = parse(readFileSync(source, "utf8"), { maxAliasCount: -1 });

function pick(operation, rule) {
  const out = structuredClone(operation);
  delete out.parameters;
  if (rule.requestOnly) delete out.responses;
  for (const response of Object.values(out.responses ?? {})) delete response.headers;
  if (rule.examples) {
    for (const media of Object.values(out.requestBody?.content ?? {})) {
      const kept = {};
      for (const name of rule.examples) {
        if (!media.examples?.[name]) throw new Error(`example "${name}" not found`);
        kept[name] = media.examples[name];
      }
      media.examples = kept;
      // The message schemas are huge and reject Meta's own examples (see product.md 6).
      if (rule.requestOnly) delete media.schema;
    }
  }
  return out;
}

const paths = {};
for (const [p, methods] of Object.entries(KEEP)) {
  if (!doc.paths[p]) throw new Error(`path ${p} not found`);
  paths[p] = {};
  for (const [method, rule] of Object.entries(methods)) {
    if (!doc.paths[p][method]) throw new Error(`${method} ${p} not found`);
    paths[p][method] = pick(doc.paths[p][method], rule);
  }
}

// Every component a kept part refers to, transitively.
const components = {};
const pending = [paths, ...SCHEMAS.map((name) => ({ $ref: `#/components/schemas/${name}` }))];
const seen = new Set();
while (pending.length) {
  const node = pending.pop();
  if (node === null || typeof node !== "object") continue;
  if (typeof node.$ref === "string" && !seen.has(node.$ref)) {
    seen.add(node.$ref);
    const [, , kind, name] = node.$ref.split("/");
    const value = doc.components?.[kind]?.[name];
    if (value === undefined) throw new Error(`${node.$ref} not found`);
    components[kind] ??= {};
    components[kind][name] = value;
    pending.push(value);
  }
  for (const child of Object.values(node)) pending.push(child);
}

const subset = {
  openapi: doc.openapi,
  info: {
    title: "Parts of Meta's WhatsApp Business Messaging API description used by the tests",
    version: doc.info.version,
    "x-source": `${path.basename(source)} (Meta's OpenAPI description, ${doc.info.version})`,
    "x-extracted-by": "scripts/extract-meta-openapi.mjs",
    license: doc.info.license,
    termsOfService: doc.info.termsOfService,
  },
  paths,
  components,
};
writeFileSync(target, `${JSON.stringify(subset, null, 1)}\n`);
console.log(
  `wrote ${path.relative(root, target)}: ${Object.keys(paths).length} paths, ${seen.size} components`,
);
