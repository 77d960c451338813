// The explorer page: static files built into dist/web by `npm run build`, served without a token
// (they hold no data; every query the page makes carries the user's token). GET /explorer is the page;
// GET /explorer/<file> its scripts, styles and catalog.json. Only plain file names of dist/web itself are
// served (no sub-directories, no dot segments), with fixed content types and `Cache-Control: no-cache`
// plus a strong ETag, so that a rebuilt page is picked up at once while unchanged files answer 304.
import type { Router } from '@koa/router';
import type { ParameterizedContext } from 'koa';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { catalogFor } from '../../catalog/catalog.js';
import { webCatalogText } from '../../catalog/write-web-catalog.js';
import { ApiError } from '../../errors.js';
import { entityTag, notModified } from '../etag.js';
import type { RequestState } from '../state.js';

/** dist/web, next to dist/src once compiled. */
export const WEB_DIR = fileURLToPath(new URL('../../../web/', import.meta.url));

const TYPES: Record<string, string> = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  json: 'application/json; charset=utf-8',
  svg: 'image/svg+xml',
  png: 'image/png',
};

/** A plain file name: name parts of letters, digits, `_` and `-` joined by single dots, a known extension. */
const ASSET_NAME = /^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*\.(html|js|css|json|svg|png)$/;

// The page fetches nothing but its own files and the API of the same origin; it never runs inline script.
const PAGE_HEADERS: Record<string, string> = {
  'Content-Security-Policy': "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
};

interface Asset { body: Buffer; etag: string; type: string }

const missing = (name: string) =>
  new ApiError(404, 'not found', `The explorer page has no file named ${JSON.stringify(name)}.`);

export function explorerPageRoutes(router: Router<RequestState>, deps: { engine: string; webDir?: string }): void {
  const dir = deps.webDir ?? WEB_DIR;
  const cache = new Map<string, { mtimeMs: number; size: number; asset: Asset }>();
  const asset = (body: Buffer, ext: string): Asset =>
    ({ body, type: TYPES[ext]!, etag: entityTag([body]) });
  // catalog.json is built for the default engine name; with another one (interface §1) the field names
  // differ, so it is rendered from the same function at run time.
  const runtimeCatalog = deps.engine === 'terraform' ? null : asset(Buffer.from(webCatalogText(catalogFor(deps.engine))), 'json');

  async function load(name: string): Promise<Asset | null> {
    const match = ASSET_NAME.exec(name);
    if (!match) return null;
    if (name === 'catalog.json' && runtimeCatalog) return runtimeCatalog;
    const path = join(dir, name);
    const info = await stat(path).catch(() => null);
    if (!info?.isFile()) return null;
    const hit = cache.get(name);
    if (hit && hit.mtimeMs === info.mtimeMs && hit.size === info.size) return hit.asset;
    const loaded = asset(await readFile(path), match[1]!);
    cache.set(name, { mtimeMs: info.mtimeMs, size: info.size, asset: loaded });
    return loaded;
  }

  async function send(ctx: ParameterizedContext<RequestState>, name: string, notFound: ApiError) {
    const found = await load(name);
    if (!found) throw notFound;
    ctx.set('Cache-Control', 'no-cache');
    ctx.set('X-Content-Type-Options', 'nosniff');
    if (found.type.startsWith('text/html')) for (const [k, v] of Object.entries(PAGE_HEADERS)) ctx.set(k, v);
    if (notModified(ctx, found.etag)) return;
    ctx.set('ETag', found.etag);
    ctx.type = found.type;
    ctx.body = found.body;
  }

  router.get('/explorer', async (ctx) => {
    // The router matches /explorer/ too; the page's relative URLs (explorer/app.js) need /explorer.
    if (ctx.path.endsWith('/')) {
      ctx.status = 308;
      ctx.redirect(`../explorer${ctx.search}`);
      return;
    }
    await send(ctx, 'index.html', new ApiError(404, 'not found', 'The explorer page is not built: run `make build`.'));
  });
  router.get('/explorer/:asset', async (ctx) => {
    const name = (ctx as unknown as { params: Record<string, string> }).params.asset!;
    await send(ctx, name, missing(name));
  });
}
