// The page's metadata, generated at build time from the service's view catalog (src/catalog/write-web-catalog.ts)
// and served as catalog.json next to this script: views, fields, types, operators and value syntax.
export type FieldType = 'string' | 'number' | 'boolean' | 'datetime';

export interface WebField {
  name: string;
  attribute: string;
  type: FieldType;
  version: boolean;
  /** A list field: a summary groups it by element, and a drill-down filters it with `contains`. */
  list: boolean;
  description: string;
}

export interface WebView {
  name: string;
  description: string;
  rowType: string;
  defaultSort: string[];
  /** The fields a person tells rows apart by, shown first in the table (the catalog's `identifying`). */
  identifying: string[];
  fields: WebField[];
}

export interface WebCatalog {
  engine: string;
  operators: { byType: Record<FieldType, string[]>; negative: string[]; ignoresValue: string[] };
  valuePatterns: Record<FieldType, string | null>;
  page: { defaultSize: number; maxSize: number };
  /** What a summary (and a trend's `sum`) accepts: the periods of a datetime group, and how many group and summed fields. */
  summary: { periods: string[]; maxGroups: number; maxSums: number };
  views: WebView[];
  /** The views read across organizations ("All organizations"): organization_name first. */
  acrossViews: WebView[];
}

export async function loadCatalog(): Promise<WebCatalog> {
  const res = await fetch(new URL('catalog.json', import.meta.url), { cache: 'no-cache' });
  if (!res.ok) throw new Error(`catalog.json answered ${res.status}`);
  return (await res.json()) as WebCatalog;
}

/**
 * The views as the organization picker reads them: one organization's, or across organizations (`across`,
 * "All organizations"), where every view has organization_name first. The page switches it as the picker changes.
 */
export class Catalog {
  private readonly byName: Map<string, WebView>;
  private readonly acrossByName: Map<string, WebView>;
  across = false;
  constructor(readonly data: WebCatalog) {
    this.byName = new Map(data.views.map((v) => [v.name, v]));
    this.acrossByName = new Map(data.acrossViews.map((v) => [v.name, v]));
  }
  get views(): WebView[] { return this.across ? this.data.acrossViews : this.data.views; }
  get defaultView(): WebView { return this.views[0]!; }
  view(name: string): WebView | undefined { return (this.across ? this.acrossByName : this.byName).get(name); }
  field(view: WebView, name: string): WebField | undefined { return view.fields.find((f) => f.name === name); }
  operators(type: FieldType): string[] { return this.data.operators.byType[type]; }
  ignoresValue(operator: string): boolean { return this.data.operators.ignoresValue.includes(operator); }
  isNegative(operator: string): boolean { return this.data.operators.negative.includes(operator); }
  /** Whether `value` has the syntax the API accepts for `type` (a hint only: the API decides). */
  valueLooksValid(type: FieldType, value: string): boolean {
    const pattern = this.data.valuePatterns[type];
    return pattern === null || new RegExp(pattern).test(value);
  }
}
