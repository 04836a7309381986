import { and, asc, eq, ilike, sql } from "drizzle-orm";
import type { z } from "zod";
import type { Template } from "../contracts/account.js";
import type { Db, DbOrTx } from "../db/client.js";
import { messageTemplates } from "../db/schema/index.js";
import type { AppDeps } from "../deps.js";
import { ApiError } from "../http/errors.js";
import { channelFor } from "../messaging/channel.js";
import { GraphApiError, type TemplateComponentParameters } from "../upstream/graph.js";
import {
  bodyParameterNames,
  bodyParameterTexts,
  renderTemplateBody,
  type StoredTemplate,
  templateKey,
  templateProblem,
} from "./placeholders.js";

export type TemplateRow = typeof messageTemplates.$inferSelect;

export const toTemplateJson = (t: TemplateRow): z.infer<typeof Template> => ({
  id: t.id,
  upstream_id: t.upstreamId,
  name: t.name,
  language: t.language,
  status: t.status,
  category: t.category,
  components: t.components,
  updated_at: t.updatedAt,
});

/**
 * Replaces the account's stored templates with its business account's
 * current ones. Every page is read before anything is written, and the write
 * is one transaction: a sync that fails half-way leaves the old list whole.
 */
export async function syncTemplates(
  deps: Pick<AppDeps, "db" | "cipher" | "graph" | "now">,
  accountId: string,
) {
  const channel = await channelFor(deps, accountId);
  if (!channel.businessAccountId) {
    throw new ApiError(
      400,
      "The messaging channel has no business_account_id: save it with the channel configuration to sync templates",
    );
  }
  let upstream: Awaited<ReturnType<typeof deps.graph.listTemplates>>;
  try {
    upstream = await deps.graph.listTemplates(channel.token, channel.businessAccountId);
  } catch (error) {
    if (error instanceof GraphApiError) throw new ApiError(502, error.message);
    throw error;
  }
  // Meta keys templates by name and language; a repeated pair keeps its last entry.
  const unique = new Map(upstream.map((t) => [templateKey(t.name, t.language), t]));
  const now = deps.now();
  await deps.db.transaction(async (tx) => {
    const kept = [...unique.values()];
    await tx.delete(messageTemplates).where(
      and(
        eq(messageTemplates.accountId, accountId),
        kept.length
          ? sql`(${messageTemplates.name}, ${messageTemplates.language}) not in (${sql.join(
              kept.map((t) => sql`(${t.name}, ${t.language})`),
              sql`, `,
            )})`
          : undefined,
      ),
    );
    if (kept.length) {
      await tx
        .insert(messageTemplates)
        .values(
          kept.map((t) => ({
            accountId,
            upstreamId: t.id,
            name: t.name,
            language: t.language,
            status: t.status,
            category: t.category,
            components: t.components,
            createdAt: now,
            updatedAt: now,
          })),
        )
        .onConflictDoUpdate({
          target: [messageTemplates.accountId, messageTemplates.name, messageTemplates.language],
          set: {
            upstreamId: sql`excluded.upstream_id`,
            status: sql`excluded.status`,
            category: sql`excluded.category`,
            components: sql`excluded.components`,
            updatedAt: now,
          },
        });
    }
  });
  const templates = await listTemplates(deps.db, { accountId });
  return { templates, synced: unique.size };
}

export async function listTemplates(db: Db, input: { accountId: string; status?: string; q?: string }) {
  const rows = await db
    .select()
    .from(messageTemplates)
    .where(
      and(
        eq(messageTemplates.accountId, input.accountId),
        input.status ? eq(messageTemplates.status, input.status.toUpperCase()) : undefined,
        input.q
          ? ilike(messageTemplates.name, `%${input.q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`)
          : undefined,
      ),
    )
    .orderBy(asc(messageTemplates.name), asc(messageTemplates.language));
  return rows.map(toTemplateJson);
}

/** A `message_template_status_update` from Meta: moves the stored template's status. */
export async function applyTemplateStatus(
  db: DbOrTx,
  input: {
    accountId: string;
    upstreamId: string | null;
    name: string | null;
    language: string | null;
    event: string;
    now: Date;
  },
): Promise<boolean> {
  const byId = input.upstreamId ? eq(messageTemplates.upstreamId, input.upstreamId) : undefined;
  const byName =
    input.name && input.language
      ? and(eq(messageTemplates.name, input.name), eq(messageTemplates.language, input.language))
      : undefined;
  if (!byId && !byName) return false;
  const updated = await db
    .update(messageTemplates)
    .set({ status: input.event.toUpperCase(), updatedAt: input.now })
    .where(and(eq(messageTemplates.accountId, input.accountId), byId ?? byName))
    .returning({ id: messageTemplates.id });
  return updated.length > 0;
}

export interface TemplateRequest {
  name: string;
  language: string;
  components?: TemplateComponentParameters[];
}

/**
 * Checks a template send against the stored template: it must exist, be
 * approved, and each component must get as many parameters as it has `{{n}}`
 * placeholders. Answers the message to send and the body as the customer
 * reads it. Throws 400 naming the template or the component.
 */
export async function prepareTemplateSend(db: DbOrTx, accountId: string, request: TemplateRequest) {
  const [template] = await db
    .select()
    .from(messageTemplates)
    .where(
      and(
        eq(messageTemplates.accountId, accountId),
        eq(messageTemplates.name, request.name),
        eq(messageTemplates.language, request.language),
      ),
    );
  const problem = templateProblem(template, request);
  if (problem) throw new ApiError(400, problem);
  const text =
    renderTemplateBody(
      template?.components ?? [],
      bodyParameterTexts(request.components ?? []),
      bodyParameterNames(request.components ?? []),
    ) ?? request.name;
  return {
    outbound: {
      type: "template" as const,
      template: {
        name: request.name,
        language: { code: request.language },
        ...(request.components?.length ? { components: request.components } : {}),
      },
    },
    text,
  };
}

/** The account's templates keyed for the flow validator (see validate.ts templateKey). */
export async function templateCatalog(db: DbOrTx, accountId: string): Promise<Map<string, StoredTemplate>> {
  const rows = await db
    .select({
      name: messageTemplates.name,
      language: messageTemplates.language,
      status: messageTemplates.status,
      components: messageTemplates.components,
    })
    .from(messageTemplates)
    .where(eq(messageTemplates.accountId, accountId));
  return new Map(
    rows.map((r) => [templateKey(r.name, r.language), { status: r.status, components: r.components }]),
  );
}
