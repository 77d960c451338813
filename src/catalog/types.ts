export type FieldType = 'string' | 'number' | 'boolean' | 'datetime';

export type ViewName = 'workspaces' | 'tf_versions' | 'providers' | 'modules' | 'resources';

/** A field as declared in views.ts: `{engine}` in a name stands for the configured engine name. */
export interface FieldDecl {
  name: string;
  type: FieldType;
  /** Holds version strings: sorted by version precedence through the `<column>__vk` key column. */
  version?: boolean;
  /** SQL expression over the loader's staging tables that computes the value (see views.ts). */
  build: string;
  description: string;
  /**
   * Pages commonly filter a large organization's rows by this field's exact value (`is`): the loader stores
   * an index beside the view's table (catalog.ts indexFields), and such a page reads only the matching rows.
   */
  indexed?: boolean;
  /**
   * A list field: SQL for its elements as a sorted VARCHAR[] (null when none), over the same tables as
   * `build`, which joins them with ', '. The loader stores the elements beside the text (catalog.ts
   * membersColumn), so that a summary groups by the members the list was made from, not by its text split again.
   */
  members?: string;
}

export interface ViewDecl {
  name: ViewName;
  /** JSON:API `type` of a result row. */
  rowType: string;
  description: string;
  /** Default sort keys (API names, `-` for descending); the row id always ends the order. */
  defaultSort: string[];
  /**
   * The fields a person tells rows apart by (a name, a version, an address): the explorer page shows them
   * first, because the alphabetical default order can push them off-screen. The API and CSV keep that order.
   */
  identifying: string[];
  /** SQL expression for the row id, over the same FROM as the fields. */
  id: string;
  /** SQL expression for the owning organization. */
  organization: string;
  /**
   * FROM … [WHERE …] [GROUP BY …] over the staging tables. The loader joins in the order written (load.ts),
   * so the largest relation comes first and the tables it looks up after it.
   */
  from: string;
  fields: FieldDecl[];
}

/** A field resolved for one engine name. */
export interface Field {
  /** snake_case API name (query string, CSV header). */
  name: string;
  /** kebab-case JSON attribute name. */
  attribute: string;
  /** Column in the snapshot's Parquet file: engine-independent, so snapshots do not depend on configuration. */
  column: string;
  type: FieldType;
  version: boolean;
  description: string;
  /** Position in the view's declaration: the field's place in a row's precomputed JSON values (`_json`). */
  index: number;
  /** The loader stores an index of the view's rows by this field's value (FieldDecl.indexed). */
  indexed: boolean;
  /** A list field (FieldDecl.members): its elements are stored in membersColumn(column). */
  list: boolean;
  /** A string field with no folded copy stored (the organization column): its fold is computed where it is compared. */
  foldComputed?: boolean;
}

export interface View {
  name: ViewName;
  rowType: string;
  description: string;
  defaultSort: string[];
  /** ViewDecl.identifying, resolved for the engine name. */
  identifying: string[];
  /** Fields in default order: alphabetical by API name (interface §2). */
  fields: Field[];
  field(name: string): Field | undefined;
  /** Parquet file name of the view inside a snapshot. */
  file: string;
  /** Read across organizations (catalog.ts acrossOrganizations): `organization_name` first. */
  across?: boolean;
}
