import { timestamp } from "drizzle-orm/pg-core";

// Millisecond precision, so a timestamp read into a JS Date and written back
// (in a page cursor, for example) compares equal to the stored value.
export const timestamptz = (name: string) => timestamp(name, { withTimezone: true, precision: 3 });
