import { parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js';

/**
 * Normalises a phone number given in E.164 or in a local format of `region` to E.164;
 * undefined when it is not a valid number.
 */
export function normalizePhoneNumber(input: string, region: string): string | undefined {
  const trimmed = input.trim();
  if (!/^[+\d\s().\-\/]{3,40}$/.test(trimmed)) return undefined;
  const parsed = parsePhoneNumberFromString(trimmed, region as CountryCode);
  if (!parsed || !parsed.isValid()) return undefined;
  return parsed.number;
}
