import { z } from "zod";
import { jsonValueProblem } from "../http/input.js";
import { isStorable, UNSTORABLE_MESSAGE } from "../http/storable.js";

const templateShape = z.object(
  {
    name: z
      .string({ error: "template.name must be a string" })
      .trim()
      .min(1, "template.name is required")
      .max(512)
      .refine(isStorable, `template.name ${UNSTORABLE_MESSAGE}`),
    language: z
      .string({ error: "template.language must be a string" })
      .trim()
      .min(1, "template.language is required")
      .max(20)
      .refine(isStorable, `template.language ${UNSTORABLE_MESSAGE}`),
    components: z
      .array(
        z.object({
          type: z.string().trim().min(1).max(20),
          sub_type: z.string().max(20).optional(),
          index: z
            .union([z.string().max(2), z.number().int().min(0).max(9)])
            .transform(String)
            .optional(),
          parameters: z.array(z.record(z.string(), z.unknown())).max(100),
        }),
      )
      .max(10)
      .optional(),
  },
  { error: "template must be an object { name, language, components? }" },
);

/**
 * A template to send: `{ name, language, components? }`, components as Meta
 * takes them. Parameters are stored with the message (jsonb) before it is
 * sent, so what PostgreSQL cannot store is refused here, before anything.
 */
export const templateRequestSchema = templateShape.superRefine((template, context) => {
  const problem = jsonValueProblem(template.components ?? []);
  if (problem)
    context.addIssue({ code: "custom", path: ["components"], message: `template.components ${problem}` });
});
