import { parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js';

/**
 * The characters a phone number may be written with, once trimmed: digits, +, spaces and
 * ( ) . / - (3 to 40 of them). Also the OpenAPI pattern of phone-number fields, so it avoids
 * escapes that JSON Schema's regular expressions do not all read.
 */
export const PHONE_NUMBER_PATTERN = /^[+\d\s()./-]{3,40}$/;

/**
 * Normalises a phone number given in E.164 or in a local format of `region` to E.164;
 * undefined when it is not a phone number. "Possible" (a known country code and a length
 * numbers of that country have), not "valid" (in an area code and range the metadata knows
 * to be assigned): the metadata lags new ranges, and fictional test numbers such as
 * +1 555 555 0100 or +44 7700 900123 are numbers people create contacts with.
 */
export function normalizePhoneNumber(input: string, region: string): string | undefined {
  const trimmed = input.trim();
  if (!PHONE_NUMBER_PATTERN.test(trimmed)) return undefined;
  const parsed = parsePhoneNumberFromString(trimmed, region as CountryCode);
  if (!parsed || !parsed.isPossible()) return undefined;
  return parsed.number;
}
