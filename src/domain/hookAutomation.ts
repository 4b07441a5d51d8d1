// What a webhook hook does with each accepted request, and how a request body becomes a
// contact (docs/webhooks.md). Pure: the hook-run workflow imports it.
import { normalizePhoneNumber } from './phone.js';
import { canonicalTimeZone } from './timeZones.js';
import type { ContactFields } from './contactFields.js';

/** A hook's automation, stored in hooks.automation (docs/webhooks.md "The run"). */
export type HookAutomation =
  | { kind: 'schedule_call'; script_id: string; from_number: string }
  | { kind: 'add_to_list'; list_id: string }
  | { kind: 'none' };

export type HookAutomationKind = HookAutomation['kind'];

/** The contact fields a body can carry, phone_number already in E.164. */
export type MappedContact = ContactFields;

export type ContactMapping = { ok: true; contact: MappedContact } | { ok: false; reason: string };

type TextField = Exclude<keyof MappedContact, 'phone_number' | 'age' | 'timezone'>;

/**
 * Accepted names per contact field, best first. Body keys are compared after lower-casing
 * and dropping everything but letters and digits, so `phoneNumber`, `Phone Number` and
 * `phone-number` all mean phone_number.
 */
export const PHONE_ALIASES = ['phonenumber', 'phone', 'to', 'mobile', 'mobilephone', 'mobilenumber', 'cellphone', 'cell', 'telephone', 'tel'];
export const TEXT_ALIASES: Record<TextField, string[]> = {
  first_name: ['firstname', 'first', 'givenname', 'fname'],
  last_name: ['lastname', 'last', 'surname', 'familyname', 'lname'],
  email: ['email', 'emailaddress', 'mail'],
  address: ['address', 'streetaddress'],
  location: ['location'],
  gender: ['gender'],
  title: ['title', 'jobtitle'],
};
export const FULL_NAME_ALIASES = ['fullname', 'name'];
export const AGE_ALIASES = ['age'];
/** An IANA zone name; anything else (an offset, a city) is ignored, like an over-long text. */
export const TIMEZONE_ALIASES = ['timezone', 'tz', 'timezonename', 'zone'];
/** The nested object whose fields win over top-level ones. */
export const NESTED_CONTACT_KEY = 'contact';

/** Longer text values are ignored rather than cut (a cut email or address is wrong data). */
export const MAX_TEXT_LENGTH = 1000;

const normalizeKey = (key: string) => key.toLowerCase().replace(/[^a-z0-9]/g, '');

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Keys of one object by their normalised form; the first spelling of a normalised key wins. */
function indexKeys(source: Record<string, unknown>): Map<string, unknown> {
  const index = new Map<string, unknown>();
  for (const [key, value] of Object.entries(source)) {
    const normalized = normalizeKey(key);
    if (!index.has(normalized)) index.set(normalized, value);
  }
  return index;
}

function text(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const trimmed = value.trim();
  return trimmed !== '' && trimmed.length <= MAX_TEXT_LENGTH ? trimmed : undefined;
}

function phoneCandidate(value: unknown): string | undefined {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value > 0) return String(value);
  return text(value);
}

function age(value: unknown): number | undefined {
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^\s*\d{1,3}\s*$/.test(value) ? Number(value) : NaN;
  return Number.isInteger(n) && n >= 0 && n <= 150 ? n : undefined;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'string' ? 'a string' : `a ${typeof value}`;
}

const quoted = (value: string) => JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);

/**
 * The contact a webhook body describes: fields of a nested `contact` object first, then
 * top-level ones (docs/webhooks.md lists the accepted names). Fails, with a reason an
 * operator can act on, when the body holds no valid phone number.
 */
export function mapHookContact(body: unknown, region: string): ContactMapping {
  if (!isPlainObject(body)) {
    return { ok: false, reason: `Webhook body is ${describe(body)}, not a JSON object with a phone number` };
  }
  const sources: Map<string, unknown>[] = [];
  const top = indexKeys(body);
  const nested = top.get(NESTED_CONTACT_KEY);
  if (isPlainObject(nested)) sources.push(indexKeys(nested));
  sources.push(top);

  const pick = <T>(aliases: string[], read: (v: unknown) => T | undefined): T | undefined => {
    for (const source of sources) {
      for (const alias of aliases) {
        const value = read(source.get(alias));
        if (value !== undefined) return value;
      }
    }
    return undefined;
  };

  let phone: string | undefined;
  let rejected: string | undefined;
  for (const source of sources) {
    for (const alias of PHONE_ALIASES) {
      const candidate = phoneCandidate(source.get(alias));
      if (candidate === undefined) continue;
      phone = normalizePhoneNumber(candidate, region);
      if (phone) break;
      rejected ??= candidate;
    }
    if (phone) break;
  }
  if (!phone) {
    return {
      ok: false,
      reason: rejected
        ? `Webhook body has no usable phone number: ${quoted(rejected)} is not a valid phone number`
        : 'Webhook body has no phone number (looked for phone_number, phone, to, mobile and similar fields, at the top level and in "contact")',
    };
  }

  const contact: MappedContact = { phone_number: phone };
  for (const [field, aliases] of Object.entries(TEXT_ALIASES) as [TextField, string[]][]) {
    const value = pick(aliases, text);
    if (value !== undefined) contact[field] = value;
  }
  const contactAge = pick(AGE_ALIASES, age);
  if (contactAge !== undefined) contact.age = contactAge;
  const timezone = pick(TIMEZONE_ALIASES, (v) => (typeof v === 'string' ? canonicalTimeZone(v.trim()) : undefined));
  if (timezone !== undefined) contact.timezone = timezone;
  if (contact.first_name === undefined) {
    const fullName = pick(FULL_NAME_ALIASES, text);
    if (fullName !== undefined) {
      const [first, ...rest] = fullName.split(/\s+/);
      contact.first_name = first;
      if (rest.length > 0 && contact.last_name === undefined) contact.last_name = rest.join(' ');
    }
  }
  return { ok: true, contact };
}
