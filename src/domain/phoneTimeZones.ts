/**
 * A callee's time zone from their phone number, where the number says it unambiguously
 * (docs/calls.md, "Which time zone"): a region with a single zone, or, inside the United
 * States and Canada, an area code that lies wholly in one zone.
 */
import { parsePhoneNumberFromString } from 'libphonenumber-js';
import { offsetMs } from './timeZones.js';

/**
 * NANP area codes whose whole territory keeps one zone. Compiled from the North American
 * Numbering Plan Administrator's area code maps (nationalnanpa.com, "Area Code Maps"),
 * checked against the zone boundaries the IANA tz database describes in zone1970.tab.
 * Deliberately small: an area code that a zone boundary crosses (850 Florida, 812
 * Indiana, 270 Kentucky, 605 South Dakota, 208 Idaho, 541 Oregon, 928 Arizona's Navajo
 * Nation, 807 Ontario, 418 Quebec, 250 British Columbia, 709 Newfoundland and Labrador,
 * ...) is left out, and so are overlays that span several zones: those numbers fall back
 * to the team's default zone.
 */
const NANP_ZONES: Record<string, readonly string[]> = {
  'America/New_York': [
    // New York, New Jersey, Pennsylvania, New England, Delaware, Maryland, DC
    '212', '332', '646', '917', '718', '347', '929', '516', '631', '914', '845', '518', '315', '607', '716', '585',
    '201', '551', '732', '848', '908', '973', '862', '609', '856',
    '215', '267', '445', '610', '484', '717', '570', '412', '724', '814',
    '617', '857', '508', '774', '781', '339', '978', '351', '413', '203', '475', '860', '401', '603', '802', '207',
    '302', '410', '443', '301', '240', '202',
    // Virginia, West Virginia, the Carolinas, Georgia, Ohio, Michigan (lower peninsula)
    '703', '571', '804', '757', '540', '434', '276', '304', '681',
    '704', '980', '919', '984', '336', '252', '910', '828', '803', '843', '864',
    '404', '470', '678', '770', '706', '762', '912', '478', '229',
    '216', '440', '330', '234', '614', '380', '513', '937', '419', '567', '740',
    '313', '248', '734', '586', '810', '517', '616', '269', '989', '231',
    // Florida east of the Apalachicola, Kentucky's and Tennessee's eastern cities
    '305', '786', '954', '754', '561', '407', '321', '689', '813', '727', '941', '904', '352', '239', '386', '772', '863',
    '502', '859', '865',
  ],
  'America/Indiana/Indianapolis': ['317', '463', '765', '260'],
  'America/Chicago': [
    // Illinois, Wisconsin, Minnesota, Iowa, Missouri, Arkansas, Louisiana, Mississippi, Alabama, Oklahoma
    '312', '872', '773', '708', '630', '331', '847', '224', '815', '779', '217', '447', '309', '618',
    '414', '262', '608', '920', '715', '534', '612', '651', '763', '952', '507', '218',
    '515', '319', '563', '641', '712', '314', '636', '816', '660', '573', '417', '557',
    '501', '479', '870', '504', '225', '318', '337', '985', '601', '769', '662', '228',
    '205', '659', '251', '256', '938', '334', '405', '572', '918', '539', '580',
    // Texas except El Paso and the far west, Kansas City, eastern Nebraska, Tennessee's middle and west, northwest Indiana
    '214', '469', '972', '945', '817', '682', '940', '903', '430', '254', '512', '737', '210', '726', '830',
    '713', '281', '832', '346', '409', '936', '979', '361', '956', '806', '325',
    '316', '913', '402', '531', '615', '629', '901', '731', '219',
  ],
  'America/Denver': ['303', '720', '983', '719', '970', '505', '575', '801', '385', '435', '307', '406', '915'],
  'America/Phoenix': ['602', '480', '623', '520'],
  'America/Los_Angeles': [
    '213', '323', '310', '424', '818', '747', '626', '562', '657', '714', '949', '909', '951', '760', '442', '619', '858',
    '805', '820', '661', '559', '209', '916', '279', '530', '707', '925', '510', '341', '415', '628', '650', '408', '669', '831',
    '206', '253', '425', '360', '564', '509', '503', '971', '702', '725',
  ],
  'Pacific/Honolulu': ['808'],
  'America/Toronto': ['416', '647', '437', '905', '289', '365', '613', '343', '519', '226', '548', '705', '249', '514', '438', '450', '579', '819', '873'],
  'America/Winnipeg': ['204', '431'],
  'America/Edmonton': ['403', '587', '780', '825'],
  'America/Vancouver': ['604'],
  'America/Halifax': ['902', '782'],
  'America/Moncton': ['506'],
};

const AREA_CODE_ZONE = new Map<string, string>(Object.entries(NANP_ZONES).flatMap(([zone, codes]) => codes.map((code) => [code, zone] as [string, string])));

/** The zone of a NANP area code from the table above, if it has one. */
export function areaCodeTimeZone(areaCode: string): string | undefined {
  return AREA_CODE_ZONE.get(areaCode);
}

// A region's zones come from Unicode CLDR (the data Node's ICU ships, Intl.Locale's timeZones).
const regionZones = new Map<string, string | null>();

/** Zones that have kept the same offsets, day by day over 2025 and 2026 (e.g. Europe/Berlin and Europe/Busingen). */
function sameClock(zones: readonly string[]): boolean {
  const from = Date.UTC(2025, 0, 1, 12);
  for (let day = 0; day < 730; day += 1) {
    const at = from + day * 86_400_000;
    const first = offsetMs(at, zones[0]);
    if (zones.some((z) => offsetMs(at, z) !== first)) return false;
  }
  return true;
}

/** The one zone a region keeps (its CLDR zones, when they all keep the same clock), else undefined. */
export function regionTimeZone(region: string): string | undefined {
  if (!regionZones.has(region)) {
    let zone: string | null = null;
    try {
      const locale = new Intl.Locale(`und-${region}`) as Intl.Locale & { timeZones?: string[]; getTimeZones?: () => string[] };
      const zones = locale.getTimeZones?.() ?? locale.timeZones ?? [];
      if (zones.length > 0 && (zones.length === 1 || sameClock(zones))) zone = zones[0];
    } catch {
      zone = null;
    }
    regionZones.set(region, zone);
  }
  return regionZones.get(region) ?? undefined;
}

/**
 * The zone a number's region keeps, when it keeps one: inside the United States and Canada
 * by area code (the table above), elsewhere by the number's region. Undefined when the
 * number does not say (several zones, an unknown area code, a non-geographic number).
 */
export function timeZoneOfPhoneNumber(e164: string): string | undefined {
  const parsed = parsePhoneNumberFromString(e164);
  if (!parsed) return undefined;
  if (parsed.countryCallingCode === '1') {
    const byAreaCode = areaCodeTimeZone(parsed.nationalNumber.slice(0, 3));
    if (byAreaCode) return byAreaCode;
    if (!parsed.country || parsed.country === 'US' || parsed.country === 'CA') return undefined;
  }
  return parsed.country ? regionTimeZone(parsed.country) : undefined;
}
