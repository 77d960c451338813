// The Summary tab over the API's summary route (docs/summaries.md): the shown query's rows grouped by up to
// three fields (datetimes by a period), counted and summed, as a table and as bars of the count, paged. A
// group activated becomes filters of the query (`is`, an element of a list as `contains`, a period as its
// range, the null group as `is_empty`) and the Rows tab shows them: a drill-down. history.ts owns the tabs
// and tells this module when its tab is open; the summary is fetched only then.
import { organizationPath, type Api } from './api.js';
import type { Catalog, WebField, WebView } from './catalog.js';
import { barChart, valuesTable } from './charts.js';
import { byId, formatCount, h, wirePager } from './dom.js';
import * as Q from './query.js';


interface GroupResource { id: string; attributes: Record<string, unknown> & { count: number; sums?: Record<string, number | null> } }
interface SummaryBody {
  data: GroupResource[];
  meta: { rows: number; groups: number; pagination: { 'current-page': number; 'total-pages': number; 'next-page': number | null; 'prev-page': number | null } };
}

/** What history.ts lends this module. */
export interface SummaryHooks {
  api: Api;
  catalog: Catalog;
  /** Fetches `path` unless a newer request for the same slot started meanwhile; errors go to the page. */
  latest<T>(slot: { running: AbortController | null }, panel: HTMLElement, path: string, draw: (body: T) => void): Promise<void>;
  download(path: string, button: HTMLButtonElement): Promise<void>;
  /** Adds filters to the query and shows its rows. */
  drill(filters: Q.Filter[]): void;
}

const el = {
  panel: byId('panel-summary'),
  groups: [0, 1, 2].map((i) => byId<HTMLSelectElement>(`summary-group-${i}`)),
  sumsBox: byId('summary-sums-box'),
  sums: byId('summary-sums'),
  csv: byId<HTMLButtonElement>('summary-csv'),
  status: byId('summary-status'),
  chart: byId('summary-chart'),
  table: byId<HTMLTableElement>('summary-table'),
  caption: byId('summary-caption'),
  first: byId<HTMLButtonElement>('summary-first'),
  prev: byId<HTMLButtonElement>('summary-prev'),
  next: byId<HTMLButtonElement>('summary-next'),
  last: byId<HTMLButtonElement>('summary-last'),
  pageInfo: byId('summary-page-info'),
};

let hooks: SummaryHooks;
let shown: { organization: string; query: Q.UiQuery } | null = null;
const state = { view: '', groupBy: [] as string[], sums: [] as string[], page: 1, drawn: '', body: null as SummaryBody | null, running: null as AbortController | null };

/** `field` or `field:period` as the select offers it. */
const spellings = (view: WebView): { value: string; label: string }[] => view.fields.flatMap((f) => (f.type === 'datetime'
  ? hooks.catalog.data.summary.periods.map((p) => ({ value: `${f.name}:${p}`, label: `${f.name} by ${p}` }))
  : [{ value: f.name, label: f.list ? `${f.name} (each element)` : f.name }]));
const fieldOf = (view: WebView, spelling: string): WebField => hooks.catalog.field(view, spelling.split(':')[0]!)!;

export function initSummary(h0: SummaryHooks): void {
  hooks = h0;
  el.groups.forEach((select) => select.addEventListener('change', () => {
    state.groupBy = el.groups.map((s) => s.value).filter((v) => v !== '');
    state.page = 1;
    renderControls();
    void loadSummary();
  }));
  el.csv.addEventListener('click', () => {
    if (!shown || state.groupBy.length === 0) return;
    void hooks.download(`${organizationPath(shown.organization)}explorer/summary/export/csv?${Q.encodePairs(params(false))}`, el.csv);
  });
  wirePager(el, () => state.body?.meta.pagination, (page) => { state.page = page; void loadSummary(); });
}

/** The query on screen changed: the controls follow its view; the summary loads when its tab is open. */
export function showQuery(organization: string, query: Q.UiQuery, open: boolean): Promise<void> {
  const view = hooks.catalog.view(query.type) ?? hooks.catalog.defaultView;
  if (state.view !== view.name) {
    // Another view: its own fields. The first of its identifying fields is a useful first grouping.
    state.view = view.name;
    state.groupBy = [view.identifying.find((n) => hooks.catalog.field(view, n)?.type !== 'datetime') ?? view.fields[0]!.name];
    state.sums = [];
    state.page = 1;
  }
  shown = { organization, query };
  renderControls();
  return open ? loadSummary() : Promise.resolve();
}

/** The control a 400 about a summary parameter points at. */
export function controlFor(parameter: string): HTMLElement | null {
  if (parameter === 'group_by') return el.groups[0]!;
  return null;
}

function renderControls(): void {
  const view = hooks.catalog.view(state.view)!;
  const options = spellings(view);
  el.groups.forEach((select, i) => {
    const chosen = state.groupBy[i] ?? '';
    // A later slot offers fields only once the one before is chosen; a field already chosen is not offered again.
    const taken = new Set(state.groupBy.filter((_, j) => j !== i).map((s) => s.split(':')[0]));
    select.replaceChildren(
      h('option', { value: '', selected: chosen === '' }, i === 0 ? 'choose a field' : 'none'),
      ...options.filter((o) => !taken.has(o.value.split(':')[0])).map((o) => h('option', { value: o.value, selected: o.value === chosen }, o.label)));
    select.disabled = i > state.groupBy.length || i >= hooks.catalog.data.summary.maxGroups;
  });
  const numbers = view.fields.filter((f) => f.type === 'number');
  el.sumsBox.hidden = numbers.length === 0;
  el.sums.replaceChildren(...numbers.map((f) => {
    const id = `summary-sum-${f.name}`;
    const box = h('input', { type: 'checkbox', id, value: f.name, checked: state.sums.includes(f.name) });
    box.addEventListener('change', () => {
      state.sums = [...el.sums.querySelectorAll<HTMLInputElement>('input:checked')].map((b) => b.value);
      state.page = 1;
      limitSums();
      void loadSummary();
    });
    return h('div', { class: 'check' }, box, h('label', { for: id, title: f.description }, f.name));
  }));
  limitSums();
  el.csv.disabled = state.groupBy.length === 0;
}

function limitSums(): void {
  const full = state.sums.length >= hooks.catalog.data.summary.maxSums;
  for (const box of el.sums.querySelectorAll<HTMLInputElement>('input')) box.disabled = full && !box.checked;
}

/** The API's parameters: the shown query's filters and snapshot (not its fields, sort or page), then the summary's. */
function params(paging: boolean): Q.Pairs {
  const q: Q.UiQuery = { ...shown!.query, fields: null, sort: [] };
  const pairs = Q.apiParams(hooks.catalog, q, 'none').filter(([k]) => k !== 'fields' && k !== 'sort');
  pairs.push(['group_by', state.groupBy.join(',')]);
  if (state.sums.length > 0) pairs.push(['sum', state.sums.join(',')]);
  if (paging) pairs.push(['page[number]', String(state.page)], ['page[size]', String(shown!.query.size)]);
  return pairs;
}

export async function loadSummary(): Promise<void> {
  if (!shown) return;
  if (state.groupBy.length === 0) {
    el.status.textContent = 'Choose a field to group the query\'s rows by.';
    el.chart.replaceChildren();
    el.table.tHead!.replaceChildren();
    el.table.tBodies[0]!.replaceChildren();
    return;
  }
  const path = `${organizationPath(shown.organization)}explorer/summary?${Q.encodePairs(params(true))}`;
  if (path === state.drawn) return;
  const groupBy = [...state.groupBy];
  const sums = [...state.sums];
  await hooks.latest<SummaryBody>(state, el.panel, path, (body) => {
    state.drawn = path;
    state.body = body;
    render(body, groupBy, sums);
  });
}

/** A group value as the tab writes it: a period by its own name (2025, 2025-03, 2025-03-14, week of 2025-03-10). */
function label(v: unknown, period?: string): string {
  if (v === null || v === undefined) return '(none)';
  const text = String(v);
  if (period === 'year') return text.slice(0, 4);
  if (period === 'month') return text.slice(0, 7);
  if (period === 'day') return text.slice(0, 10);
  if (period === 'week') return `week of ${text.slice(0, 10)}`;
  return text;
}

function render(body: SummaryBody, groupBy: string[], sums: string[]): void {
  const view = hooks.catalog.view(state.view)!;
  const fields = groupBy.map((g) => fieldOf(view, g));
  const p = body.meta.pagination;
  el.status.textContent = `${formatCount(body.meta.groups)} group${body.meta.groups === 1 ? '' : 's'} of ${formatCount(body.meta.rows)} matching row${body.meta.rows === 1 ? '' : 's'}`
    + `${fields.some((f) => f.list) ? ' (a row counts once in each element of a list)' : ''}.`;
  const periods = groupBy.map((g) => g.split(':')[1]);
  const names = body.data.map((g) => fields.map((f, i) => label(g.attributes[f.attribute], periods[i])).join(' · '));
  const title = `count of each group, page ${formatCount(p['current-page'])} of ${formatCount(p['total-pages'])}`;
  el.chart.replaceChildren(body.data.length === 0 ? h('p', { class: 'hint' }, 'No groups.')
    : barChart(body.data.map((g, i) => ({ label: names[i]!, value: g.attributes.count })), title));
  el.table.tHead!.replaceChildren(h('tr', {},
    ...groupBy.map((g) => h('th', { scope: 'col' }, g.replace(':', ' by '))),
    h('th', { scope: 'col', class: 'num' }, 'count'),
    ...sums.map((s) => h('th', { scope: 'col', class: 'num' }, `sum of ${s}`)),
    h('th', { scope: 'col' }, h('span', { class: 'sr-only' }, 'Drill down'))));
  el.table.tBodies[0]!.replaceChildren(...body.data.map((g, i) => h('tr', { 'data-id': g.id },
    ...fields.map((f, i) => h('td', {}, label(g.attributes[f.attribute], periods[i]))),
    h('td', { class: 'num' }, formatCount(g.attributes.count)),
    ...sums.map((s) => h('td', { class: 'num' }, g.attributes.sums?.[s] === null || g.attributes.sums?.[s] === undefined ? '—' : formatCount(g.attributes.sums[s]!))),
    h('td', {}, h('button', {
      type: 'button', class: 'drill', 'aria-label': `Show the rows of ${names[i]}`,
      onclick: () => hooks.drill(drillFilters(groupBy, fields, g)),
    }, 'Show rows')))));
  el.caption.textContent = `Groups of ${view.name} by ${groupBy.map((g) => g.replace(':', ' by ')).join(', ')}, largest first unless sorted otherwise.`;
  el.pageInfo.textContent = `Page ${formatCount(p['current-page'])} of ${formatCount(p['total-pages'])}`;
  el.first.disabled = el.prev.disabled = p['prev-page'] === null;
  el.next.disabled = el.last.disabled = p['next-page'] === null;
  // The numbers of the bars, for a screen reader, beside the visible table that has them too.
  const numbers = valuesTable(title, ['group', 'count'], body.data.map((g, i) => [names[i]!, g.attributes.count]), [false, true]);
  numbers.classList.add('sr-only');
  el.chart.append(numbers);
}

/** The end of a period that starts at `start` (UTC). */
function periodEnd(start: string, period: string): string {
  const d = new Date(start);
  if (period === 'day') d.setUTCDate(d.getUTCDate() + 1);
  else if (period === 'week') d.setUTCDate(d.getUTCDate() + 7);
  else if (period === 'month') d.setUTCMonth(d.getUTCMonth() + 1);
  else d.setUTCFullYear(d.getUTCFullYear() + 1);
  return d.toISOString();
}

/** The filters that select a group's rows. */
function drillFilters(groupBy: string[], fields: WebField[], group: GroupResource): Q.Filter[] {
  return fields.flatMap((f, i): Q.Filter[] => {
    const value = group.attributes[f.attribute];
    if (value === null || value === undefined) return [{ field: f.name, operator: 'is_empty', values: [] }];
    const period = groupBy[i]!.split(':')[1];
    if (period) {
      // From the period's first millisecond (is_after is strict: one millisecond before it) to its end.
      const after = new Date(Date.parse(String(value)) - 1).toISOString();
      return [{ field: f.name, operator: 'is_after', values: [after] }, { field: f.name, operator: 'is_before', values: [periodEnd(String(value), period)] }];
    }
    return [{ field: f.name, operator: f.list ? 'contains' : 'is', values: [String(value)] }];
  });
}
