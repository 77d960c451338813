import { VIEW_DECLS } from './views.js';
import type { Field, FieldDecl, View, ViewDecl, ViewName } from './types.js';

export const VIEW_NAMES: readonly ViewName[] = VIEW_DECLS.map((v) => v.name);
export const ENGINE_PATTERN = /^[a-z][a-z0-9]*$/;

export interface Catalog {
  engine: string;
  views: readonly View[];
  view(name: string): View | undefined;
  /** A view as the cross-organization routes read it (acrossOrganizations). */
  across(name: string): View | undefined;
}

/** The column of every view's table that holds each row's organization by name. */
export const ORGANIZATION_COLUMN = '_org';

/** The field that names each row's organization, first in every view read across organizations. */
export const ORGANIZATION_FIELD_NAME = 'organization_name';

/**
 * `view` as the cross-organization routes read it (docs/access.md): the same rows, each with its
 * organization's name first. A view with an `organization_name` field of its own keeps that field, moved
 * first; any other gets one over the hidden organization column every table stores. The default order is
 * the organization's name, then the view's own.
 */
export function acrossOrganizations(view: View): View {
  const own = view.field(ORGANIZATION_FIELD_NAME);
  const organization: Field = own ?? {
    name: ORGANIZATION_FIELD_NAME,
    attribute: kebab(ORGANIZATION_FIELD_NAME),
    column: ORGANIZATION_COLUMN,
    type: 'string',
    version: false,
    indexed: false,
    list: false,
    foldComputed: true,
    description: 'Organization the row belongs to.',
    // Not in the row's stored JSON values (`_json`): a page across organizations reads each field's column.
    index: -1,
  };
  const fields = [organization, ...view.fields.filter((f) => f !== own)];
  const byName = new Map(fields.map((f) => [f.name, f]));
  return {
    ...view,
    defaultSort: [ORGANIZATION_FIELD_NAME, ...view.defaultSort.filter((k) => k.replace(/^-/, '') !== ORGANIZATION_FIELD_NAME)],
    identifying: [ORGANIZATION_FIELD_NAME, ...view.identifying.filter((n) => n !== ORGANIZATION_FIELD_NAME)],
    fields,
    field: (name) => byName.get(name),
    across: true,
  };
}

const kebab = (name: string) => name.replace(/_/g, '-');
/** A declared field's column: engine-independent, so that one snapshot serves any engine name. */
export const declaredColumn = (f: FieldDecl) => f.name.replace('{engine}', 'engine');

/**
 * The column of `view` that holds the workspace each row belongs to (the field built as the workspace's
 * id): a change batch replaces a workspace's rows by it. Undefined for a view that groups rows across
 * workspaces, whose rows a batch rebuilds for each organization it touches.
 */
export function workspaceColumn(view: string): string | undefined {
  const field = VIEW_DECLS.find((d) => d.name === view)?.fields.find((f) => f.build === 'w.id');
  return field ? declaredColumn(field) : undefined;
}

function resolveView(decl: ViewDecl, engine: string): View {
  const fields: Field[] = decl.fields
    .map((f, index) => {
      const name = f.name.replace('{engine}', engine);
      return {
        name,
        attribute: kebab(name),
        column: declaredColumn(f),
        type: f.type,
        version: f.version === true,
        indexed: f.indexed === true,
        list: f.members !== undefined,
        description: f.description.replace('{engine}', engine),
        index,
      };
    })
    // interface §2: default order is alphabetical by the API name, which the engine name can change.
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const byName = new Map(fields.map((f) => [f.name, f]));
  const identifying = decl.identifying.map((n) => n.replace('{engine}', engine));
  for (const n of identifying) if (!byName.has(n)) throw new Error(`view ${decl.name}: identifying field ${n} is not one of its fields`);
  return {
    name: decl.name,
    rowType: decl.rowType,
    description: decl.description,
    defaultSort: decl.defaultSort,
    identifying,
    fields,
    field: (name) => byName.get(name),
    file: `${decl.name}.parquet`,
  };
}

const cache = new Map<string, Catalog>();

/** The catalog for an engine name (interface §1). */
export function catalogFor(engine = 'terraform'): Catalog {
  if (!ENGINE_PATTERN.test(engine)) throw new Error(`EXPLORER_ENGINE must match ${ENGINE_PATTERN}: got ${JSON.stringify(engine)}`);
  let catalog = cache.get(engine);
  if (!catalog) {
    const views = VIEW_DECLS.map((d) => resolveView(d, engine));
    const byName = new Map(views.map((v) => [v.name as string, v]));
    const across = new Map(views.map((v) => [v.name as string, acrossOrganizations(v)]));
    catalog = { engine, views, view: (name) => byName.get(name), across: (name) => across.get(name) };
    cache.set(engine, catalog);
  }
  return catalog;
}

/** Name of the Parquet column holding the version order key of a version field. */
export const versionKeyColumn = (column: string) => `${column}__vk`;

/** The column holding a list field's elements (FieldDecl.members), a VARCHAR[]: what a summary groups it by. */
export const membersColumn = (column: string) => `${column}__m`;

/**
 * Name of the Parquet column holding a string field folded for case-insensitive tests and ordering
 * (interface §4: ASCII A–Z to a–z only). Precomputed at load: translate() costs microseconds per row.
 */
export const foldedColumn = (column: string) => `${column}__f`;

/**
 * The column holding each row's field values as one JSON array, in declaration order, computed at load:
 * a page reads it and the few columns its filters and sort need instead of every field's column (DuckDB
 * decodes a whole vector of each column it touches, so a wide page cost as much for 20 rows as for 2,000).
 */
export const ROW_JSON_COLUMN = '_json';

/** The column holding each row's organization as an integer, numbered in name order at load (staging.ts). */
export const ORGANIZATION_KEY_COLUMN = '_org_key';

/** The column holding each row's CSV line of every field in default order (compile.ts csvLineSql). */
export const CSV_LINE_COLUMN = '_csv';

/**
 * The columns of the index the loader stores for an indexed field of `view` (FieldDecl.indexed), beside the
 * organization key, the row id (`_id`, which ends every order) and the view row's position (`_row`): the
 * field's own columns, and every field that is not a string (numbers, booleans and datetimes are a few bytes
 * a row). A page whose filters and sort read only these reads the index instead of the organization's rows;
 * a sort by another string field reads the view's table as before. Strings are left out because they are
 * what makes an index expensive to sort at load (docs/performance.md, "The provider_type index").
 */
export function indexFields(view: View, indexed: Field): Field[] {
  return view.fields.filter((f) => f === indexed || f.type !== 'string');
}

/** The table of `view`'s index on the field stored in `column`, in a snapshot's DuckDB file. */
export const indexTable = (view: string, column: string) => `${view}__by_${column}`;

/** The column of an index that holds the view row's position in the view's table (its rowid). */
export const INDEX_ROW_COLUMN = '_row';

/**
 * The column holding each row's position in its view's table (equal to its rowid), with an ART index on it
 * (positionIndex) in a view that has an organization large enough for its pages to fetch rows. Such a page
 * fetches its rows by position: DuckDB turns the fetch's `IN` filter into an index lookup of those rows
 * alone, where a `rowid` filter is tested on every row of the organization (docs/performance.md, "Stored positions").
 */
export const POSITION_COLUMN = '_pos';

/** The ART index on a view table's POSITION_COLUMN, in a snapshot's DuckDB file. */
export const positionIndex = (view: string) => `${view}__pos`;

/** The columns of the DuckDB file that serve pages and exports; the portable and compacted forms leave them out. */
export const SERVING_COLUMNS = [ROW_JSON_COLUMN, CSV_LINE_COLUMN, POSITION_COLUMN] as const;
