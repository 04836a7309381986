import { sql } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import { describe, expect, it } from "vitest";
import { containsText, probeOf } from "../../src/contacts/search.js";
import { type ColumnSample, shareContaining } from "../../src/db/column-sample.js";

/** Which part of a search text the trigram index is probed with, from a column's statistics. */

const names: ColumnSample = {
  common: [{ value: "support", share: 0.2 }],
  histogram: Array.from({ length: 100 }, (_, i) => `customer ${i * 97} of berlin`),
  histogramShare: 0.75,
};

describe("a column's sample", () => {
  it("reckons the share of rows holding a word from the common values and the histogram", () => {
    expect(shareContaining(names, "Customer")).toBeCloseTo(0.75);
    expect(shareContaining(names, "support")).toBeCloseTo(0.2);
    expect(shareContaining(names, "zzz")).toBe(0);
    expect(shareContaining({ common: [], histogram: [], histogramShare: 0 }, "x")).toBe(0);
  });
});

describe("probeOf", () => {
  it("takes the rare word when another word is in most rows", () => {
    expect(probeOf("Customer 4322", names)).toBe("4322");
    expect(probeOf("customer   Müller-Lüdenscheid", names)).toBe("Lüdenscheid");
  });

  it("takes the whole text when no word is common, none is rare, or there is one word", () => {
    expect(probeOf("Anna Schmidt", names)).toBe("Anna Schmidt");
    expect(probeOf("customer berlin", names)).toBe("customer berlin");
    expect(probeOf("4322", names)).toBe("4322");
    expect(probeOf("Customer 12", names)).toBe("Customer 12");
    expect(probeOf("Customer 4322", { common: [], histogram: [], histogramShare: 0 })).toBe("Customer 4322");
  });

  it("prefers the longer of two equally rare words", () => {
    expect(probeOf("customer abcd abcdefg", names)).toBe("abcdefg");
  });
});

describe("containsText", () => {
  const dialect = new PgDialect();
  const column = sql.raw("name");
  it("is one ILIKE when the probe is the text, and escapes LIKE's wildcards", () => {
    expect(dialect.sqlToQuery(containsText(column, "50%_off"))).toMatchObject({
      sql: "name ilike $1",
      params: ["%50\\%\\_off%"],
    });
  });
  it("probes with the part and checks the whole text, lower-cased, on what it finds", () => {
    expect(dialect.sqlToQuery(containsText(column, "Customer 4322", "4322"))).toMatchObject({
      sql: "(name ilike $1 and strpos(lower(name), lower($2)) > 0)",
      params: ["%4322%", "Customer 4322"],
    });
  });
});
