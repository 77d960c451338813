// Value parsing that a regular expression cannot finish: calendar validity and time-zone offsets.

const DATETIME = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?(Z|[+-]\d{2}:\d{2})?)?$/;

/**
 * Parses a interface §4 datetime into UTC `YYYY-MM-DD HH:MM:SS.mmm` (no offset means UTC; digits past
 * milliseconds are truncated). Throws with a reason for impossible dates such as 2023-02-30.
 */
export function parseDatetime(text: string): string {
  const m = DATETIME.exec(text);
  if (!m) throw new Error('use ISO 8601, YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS[.fff]] with an optional Z or ±HH:MM');
  const [, y, mo, d, h = '00', mi = '00', s = '00', frac = '', zone = 'Z'] = m;
  const year = Number(y), month = Number(mo), day = Number(d), hour = Number(h), minute = Number(mi), second = Number(s);
  const ms = Number((frac + '000').slice(0, 3));
  if (month < 1 || month > 12) throw new Error(`month ${mo} does not exist`);
  const daysInMonth = new Date(Date.UTC(2000, month, 0)).getUTCDate() + (month === 2 && !isLeap(year) ? -1 : 0);
  if (day < 1 || day > daysInMonth) throw new Error(`day ${d} does not exist in month ${mo} of ${y}`);
  if (hour > 23 || minute > 59 || second > 59) throw new Error(`time ${h}:${mi}:${s} does not exist`);
  let offsetMinutes = 0;
  if (zone !== 'Z') {
    const oh = Number(zone.slice(1, 3)), om = Number(zone.slice(4, 6));
    if (oh > 23 || om > 59) throw new Error(`offset ${zone} does not exist`);
    offsetMinutes = (zone[0] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute - offsetMinutes, second, ms);
  const iso = date.toISOString();
  // An offset can move 0000-01-01 or 9999-12-31 out of the four-digit years DuckDB parses.
  if (iso.startsWith('-') || iso.startsWith('+')) throw new Error('it falls outside the years 0000–9999 in UTC');
  return `${iso.slice(0, 10)} ${iso.slice(11, 23)}`;
}

function isLeap(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}
