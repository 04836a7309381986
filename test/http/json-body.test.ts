import type { FastifyRequest } from "fastify";
import { describe, expect, it } from "vitest";
import { readJson } from "../../src/http/body.js";
import { ApiError } from "../../src/http/errors.js";
import { jsonDepth, MAX_JSON_DEPTH } from "../../src/http/input.js";

/** `levels` arrays inside each other: `[[[]]]` is 3. */
const nestedArrays = (levels: number) => {
  let value: unknown[] = [];
  for (let i = 1; i < levels; i++) value = [value];
  return value;
};

/** The text of `{"config": ...}` with `levels` arrays inside each other, built as text (far too deep for JSON.stringify). */
const deepBody = (levels: number) => `{"config":${"[".repeat(levels)}${"]".repeat(levels)}}`;

const requestWith = (body: string) => ({ body }) as unknown as FastifyRequest;

describe("jsonDepth (src/http/input.ts)", () => {
  it("counts a scalar as 0 and each object or array as one level", () => {
    expect(jsonDepth("text")).toBe(0);
    expect(jsonDepth(null)).toBe(0);
    expect(jsonDepth({})).toBe(1);
    expect(jsonDepth([])).toBe(1);
    expect(jsonDepth({ a: 1, b: "x" })).toBe(1);
    expect(jsonDepth({ a: { b: [] } })).toBe(3);
    // The deepest branch counts, wherever it stands among its siblings.
    expect(jsonDepth([[1], [[2]], 3])).toBe(3);
    expect(jsonDepth({ first: { deep: { deeper: {} } }, last: [] })).toBe(4);
    expect(jsonDepth({ first: [], last: { deep: { deeper: {} } } })).toBe(4);
  });

  it("answers limit + 1 once the limit is passed, however deep the document goes", () => {
    expect(jsonDepth(nestedArrays(3), 3)).toBe(3);
    expect(jsonDepth(nestedArrays(4), 3)).toBe(4);
    expect(jsonDepth({ a: [{ b: nestedArrays(10) }] }, 3)).toBe(4);
    // Far deeper than the call stack would allow a walk that did not stop at the limit.
    expect(jsonDepth(nestedArrays(200_000))).toBe(MAX_JSON_DEPTH + 1);
  });
});

describe("readJson (src/http/body.ts)", () => {
  it(`takes a body nested ${MAX_JSON_DEPTH} levels deep`, () => {
    expect(jsonDepth(readJson(requestWith(deepBody(MAX_JSON_DEPTH - 1))))).toBe(MAX_JSON_DEPTH);
  });

  it(`refuses one nested deeper than ${MAX_JSON_DEPTH} levels with 400, naming the limit`, () => {
    for (const levels of [MAX_JSON_DEPTH, 100_000]) {
      let thrown: unknown;
      try {
        readJson(requestWith(deepBody(levels)));
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(ApiError);
      expect(thrown).toMatchObject({
        status: 400,
        message: `Invalid JSON: nested deeper than ${MAX_JSON_DEPTH} levels`,
      });
    }
  });
});
