// The service's version, from package.json (three levels above dist/src/version.js): the OpenAPI document
// and the notifier's User-Agent carry it.
import { readFileSync } from 'node:fs';

export const VERSION = String((JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: unknown }).version);
