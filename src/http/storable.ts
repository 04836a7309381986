/**
 * What PostgreSQL can store as text, free of any other module (the import's
 * parsing thread loads it without zod): the check, its message and the repair.
 */

// NUL and unpaired UTF-16 surrogates are valid in JSON and in JavaScript
// strings, but PostgreSQL refuses them in text and jsonb, and encodeURIComponent
// throws on the latter.
const UNSTORABLE_SOURCE =
  "\\u0000|[\\uD800-\\uDBFF](?![\\uDC00-\\uDFFF])|(?<![\\uD800-\\uDBFF])[\\uDC00-\\uDFFF]";
const UNSTORABLE_TEST = new RegExp(UNSTORABLE_SOURCE);

export const UNSTORABLE_MESSAGE = "must not contain NUL characters or unpaired surrogates";

/** True when PostgreSQL can store the string as text. */
export const isStorable = (value: string) => !UNSTORABLE_TEST.test(value);

/** The string with every character PostgreSQL cannot store replaced by U+FFFD. */
export const replaceUnstorable = (value: string) =>
  value.replace(new RegExp(UNSTORABLE_SOURCE, "g"), "\uFFFD");
