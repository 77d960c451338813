// The explorer page's metadata (views, fields, types, operators, value syntax, page sizes, summary limits), derived from the
// catalog so that the page cannot drift from the service. `npm run build` runs this file: it writes
// dist/web/catalog.json for the default engine name and copies the page's static files (web/*.html, *.css)
// next to the compiled scripts (web/tsconfig.json compiles web/src to dist/web).
import { copyFileSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../query/validate.js';
import { catalogFor, type Catalog } from './catalog.js';
import { ALL_OPERATORS, ignoresValue, isNegative, OPERATORS_BY_TYPE, VALUE_PATTERNS, type Operator } from './operators.js';
import { MAX_GROUP_FIELDS, MAX_SUMS, SUMMARY_PERIODS } from './schemas.js';
import type { FieldType, View } from './types.js';

export interface WebCatalog {
  engine: string;
  operators: {
    byType: Record<FieldType, readonly Operator[]>;
    /** Several values mean "none of" rather than "any of". */
    negative: Operator[];
    /** Presence tests: no value. */
    ignoresValue: Operator[];
  };
  /** Value syntax per field type (null: any text). */
  valuePatterns: Record<FieldType, string | null>;
  page: { defaultSize: number; maxSize: number };
  /** What a summary (and a trend's `sum`) accepts: the periods of a datetime group, and how many group and summed fields. */
  summary: { periods: string[]; maxGroups: number; maxSums: number };
  views: WebView[];
  /** The same views read across organizations ("All organizations"): organization_name first (catalog.ts acrossOrganizations). */
  acrossViews: WebView[];
}

interface WebView {
  name: string;
  description: string;
  rowType: string;
  defaultSort: string[];
  /** Shown first in the page's table (ViewDecl.identifying). */
  identifying: string[];
  fields: { name: string; attribute: string; type: FieldType; version: boolean; list: boolean; description: string }[];
}

const webView = (v: View): WebView => ({
  name: v.name,
  description: v.description,
  rowType: v.rowType,
  defaultSort: [...v.defaultSort],
  identifying: [...v.identifying],
  fields: v.fields.map((f) => ({ name: f.name, attribute: f.attribute, type: f.type, version: f.version, list: f.list, description: f.description })),
});

export function renderWebCatalog(catalog: Catalog = catalogFor('terraform')): WebCatalog {
  return {
    engine: catalog.engine,
    operators: {
      byType: { ...OPERATORS_BY_TYPE },
      negative: ALL_OPERATORS.filter(isNegative),
      ignoresValue: ALL_OPERATORS.filter(ignoresValue),
    },
    valuePatterns: { ...VALUE_PATTERNS },
    page: { defaultSize: DEFAULT_PAGE_SIZE, maxSize: MAX_PAGE_SIZE },
    summary: { periods: [...SUMMARY_PERIODS], maxGroups: MAX_GROUP_FIELDS, maxSums: MAX_SUMS },
    views: catalog.views.map(webView),
    acrossViews: catalog.views.map((v) => webView(catalog.across(v.name)!)),
  };
}

export const webCatalogText = (catalog?: Catalog) => JSON.stringify(renderWebCatalog(catalog), null, 2) + '\n';

/** Files of web/ copied as they are (the scripts are compiled by tsc). */
const STATIC = /\.(?:html|css|svg|png)$/;

if (import.meta.url === `file://${process.argv[1]}`) {
  const root = process.cwd();
  const out = join(root, 'dist', 'web');
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'catalog.json'), webCatalogText());
  for (const name of readdirSync(join(root, 'web'))) {
    if (STATIC.test(name)) copyFileSync(join(root, 'web', name), join(out, name));
  }
}
