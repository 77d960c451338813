import { badParameter } from '../errors.js';

/**
 * Decodes a raw query string into keys and values in the order received. `+` is a space, empty
 * components (`&&`) are skipped (interface §4), and a key given twice is an error naming it.
 */
export function decodeQueryString(raw: string): Map<string, string> {
  const params = new Map<string, string>();
  for (const component of raw.split('&')) {
    if (component === '') continue;
    const eq = component.indexOf('=');
    const rawKey = eq < 0 ? component : component.slice(0, eq);
    const rawValue = eq < 0 ? '' : component.slice(eq + 1);
    const key = decodeComponent(rawKey, rawKey);
    if (key === '') continue;
    const value = decodeComponent(rawValue, key);
    if (params.has(key)) throw badParameter(key, `The parameter ${key} is given more than once.`);
    params.set(key, value);
  }
  return params;
}

function decodeComponent(text: string, parameter: string): string {
  const plus = text.replace(/\+/g, ' ');
  try {
    const decoded = decodeURIComponent(plus);
    if (decoded.includes('\u0000')) throw badParameter(parameter, `The parameter ${JSON.stringify(parameter)} contains a NUL character.`);
    return decoded;
  } catch (e) {
    if (e instanceof URIError) throw badParameter(parameter, `The parameter ${JSON.stringify(parameter)} is not valid percent-encoded UTF-8.`);
    throw e;
  }
}

const UNRESERVED = /[A-Za-z0-9\-_.~]/;
const LEFT_BY_ENCODE_URI = /[!'()*]/g;

/** interface §5: every byte but A–Z a–z 0–9 - _ . ~ is percent-encoded, space as %20. */
export function encodeStrict(text: string): string {
  // encodeURIComponent encodes every byte but those and !'()*, in upper-case hex, at a tenth of the cost of a
  // loop over characters (every page's links encode each carried parameter). It refuses a lone surrogate, which
  // no decoded parameter holds; the loop writes one as U+FFFD's bytes, as Buffer.from does.
  try {
    return encodeURIComponent(text).replace(LEFT_BY_ENCODE_URI, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  } catch {
    let out = '';
    for (const ch of text) {
      if (UNRESERVED.test(ch)) out += ch;
      else for (const byte of Buffer.from(ch, 'utf8')) out += '%' + byte.toString(16).toUpperCase().padStart(2, '0');
    }
    return out;
  }
}
