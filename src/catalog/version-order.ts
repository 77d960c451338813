// interface §5: version fields order by version precedence. DuckDB cannot express SemVer precedence
// cheaply, so the loader stores, for every value that is a version, a key whose plain code-point order
// is that precedence; the query then sorts by the key and breaks ties on the exact string.

const VERSION = /^v?(\d+)(\.\d+)?(\.\d+)?(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/;

/** Encodes a decimal integer so that string order equals numeric order: digit count of the length, length, digits. */
function numberKey(digits: string): string {
  const d = digits.replace(/^0+/, '');
  const len = String(d.length);
  return String(len.length) + len + d;
}

// Separators are chosen below every identifier character ([0-9A-Za-z-] starts at 0x2D) so that a shorter
// identifier or identifier list sorts before a longer one sharing its prefix (SemVer 2.0 §11).
const END_OF_PRERELEASE = '"'; // 0x22: fewer identifiers sort first
const NUMERIC_ID = '#'; //        0x23: numeric identifiers before alphanumeric ones
const ALNUM_ID = '%'; //          0x25
const ALNUM_END = ','; //         0x2C: "alpha" before "alpha1"
const PRERELEASE = '!'; //        0x21: a pre-release before its release
const RELEASE = '~'; //           0x7E

/** The order key of a version string, or null when the value is not a version. */
export function versionKey(value: string): string | null {
  const m = VERSION.exec(value);
  if (!m) return null;
  const part = (p: string | undefined) => numberKey(p === undefined ? '0' : p.replace('.', ''));
  let key = part(m[1]) + part(m[2]) + part(m[3]);
  if (m[4] === undefined) return key + RELEASE;
  key += PRERELEASE;
  for (const id of m[4].slice(1).split('.')) {
    key += /^\d+$/.test(id) ? NUMERIC_ID + numberKey(id) : ALNUM_ID + id + ALNUM_END;
  }
  return key + END_OF_PRERELEASE;
}
