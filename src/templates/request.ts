import { z } from "zod";

/** A template to send: `{ name, language, components? }`, components as Meta takes them. */
export const templateRequestSchema = z.object(
  {
    name: z
      .string({ error: "template.name must be a string" })
      .trim()
      .min(1, "template.name is required")
      .max(512),
    language: z
      .string({ error: "template.language must be a string" })
      .trim()
      .min(1, "template.language is required")
      .max(20),
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
