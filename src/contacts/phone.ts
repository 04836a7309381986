/** Phone numbers as contacts keep them: digits with the country code, no `+`. */
import { type CountryCode, isSupportedCountry, parsePhoneNumberFromString } from "libphonenumber-js/min";

/** True when `code` is a country libphonenumber knows (ISO 3166-1 alpha-2). */
export const isCountry = (code: string): code is CountryCode => isSupportedCountry(code);

/**
 * The number normalised (digits with the country code), or null when it is
 * not a valid phone number. A national number (no `+` or international
 * prefix) is read in `defaultCountry`; without one it must be international.
 * Digits alone that already start with a valid country code are accepted too.
 */
export function normalisePhone(input: string, defaultCountry: string | null): string | null {
  const raw = input.trim();
  if (raw === "" || raw.length > 40) return null;
  const country = defaultCountry && isCountry(defaultCountry) ? defaultCountry : undefined;
  const candidates = raw.startsWith("+") || raw.startsWith("00") ? [raw.replace(/^00/, "+")] : [];
  if (candidates.length === 0) {
    if (country) candidates.push(raw);
    candidates.push(`+${raw}`);
  }
  for (const candidate of candidates) {
    const parsed = candidate.startsWith("+")
      ? parsePhoneNumberFromString(candidate)
      : parsePhoneNumberFromString(candidate, country);
    if (parsed?.isValid()) return parsed.number.slice(1);
  }
  return null;
}
