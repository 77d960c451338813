// The page's history features over the API's history routes: a snapshot picker (time travel), the changes
// of the shown query since an older snapshot, and charts (the query's count over the retained snapshots;
// workspace_count of the rows shown for the views that count workspaces). app.ts owns the query, its URL
// and its errors; this module draws from what app.ts shows and asks it to run again with another snapshot.
// Changes and the trend are fetched only while their tab is open, so a plain query costs no extra request.
import { ALL_ORGANIZATIONS, organizationPath, type Api } from './api.js';
import type { Catalog, WebField, WebView } from './catalog.js';
import { barChart, trendChart, valuesTable, type TrendPoint } from './charts.js';
import { byId, focus, formatCount, h, wirePager } from './dom.js';
import * as Q from './query.js';
import * as Summary from './summary.js';

interface Pagination {
  'current-page': number; 'page-size': number; 'next-page': number | null; 'prev-page': number | null;
  'total-pages': number; 'total-count': number;
}
interface SnapshotResource {
  id: string;
  attributes: { 'loaded-at': string; label: string | null; current: boolean; counts: Record<string, number> };
}
type Attributes = Record<string, unknown>;
interface ChangeResource {
  id: string;
  attributes: { change: 'added' | 'removed' | 'changed'; 'changed-fields': string[]; before: Attributes | null; after: Attributes | null };
}
interface ChangesBody {
  data: ChangeResource[];
  meta: { pagination: Pagination; from: string; to: string; counts: { added: number; removed: number; changed: number } };
}
interface TrendBody {
  data: { id: string; attributes: { 'loaded-at': string; label: string | null; count: number; sums?: Record<string, number | null> } }[];
}

/** What app.ts lends this module. */
export interface HistoryHooks {
  api: Api;
  catalog: Catalog;
  /** Runs the current query again, reading `snapshot` (undefined: the current one). */
  travel(snapshot: string | undefined): void;
  /** Fetches a CSV with the token and hands it to the browser. */
  download(path: string, button: HTMLButtonElement): Promise<void>;
  explain(e: unknown): void;
  clearError(): void;
  /** The organization in the form (a failed query shows no page to take it from). */
  organization(): string;
  /** Adds filters to the query and runs it, first page (the Summary tab's drill-down). */
  drill(filters: Q.Filter[]): void;
}

/** A page of rows on screen: its query, organization, and the snapshot that answered (X-Explorer-Snapshot). */
export interface ShownPage {
  organization: string;
  query: Q.UiQuery;
  snapshot: string | null;
  rows: { id: string; attributes: Attributes }[];
}

type Tab = 'rows' | 'changes' | 'charts' | 'summary';
/** Views whose rows count workspaces: their rows get a bar chart of workspace_count. */
const COUNT_VIEWS = ['tf_versions', 'providers', 'modules'];
const MAX_CELL_CHARS = 300;

const el = {
  results: byId('results'),
  snapshot: byId<HTMLSelectElement>('snapshot'),
  snapshotNote: byId('snapshot-note'),
  tabs: [...document.querySelectorAll<HTMLButtonElement>('#results [role=tab]')],
  changesPanel: byId('panel-changes'),
  changesFrom: byId<HTMLSelectElement>('changes-from'),
  changesCsv: byId<HTMLButtonElement>('changes-csv'),
  changesSummary: byId('changes-summary'),
  changesTable: byId<HTMLTableElement>('changes-table'),
  changesCaption: byId('changes-caption'),
  changesFirst: byId<HTMLButtonElement>('changes-first'),
  changesPrev: byId<HTMLButtonElement>('changes-prev'),
  changesNext: byId<HTMLButtonElement>('changes-next'),
  changesLast: byId<HTMLButtonElement>('changes-last'),
  changesPageInfo: byId('changes-page-info'),
  chartsPanel: byId('panel-charts'),
  sumsBox: byId('trend-sums-box'),
  sums: byId('trend-sums'),
  trend: byId('trend-chart'),
  trendSummary: byId('trend-summary'),
  bars: byId('bars'),
  barsHeading: byId('bars-heading'),
  barChart: byId('bar-chart'),
};

let hooks: HistoryHooks;
let shown: ShownPage | null = null;
/** Bumped by every shown page: answers that arrive for an older one are dropped. */
let shownSeq = 0;
let snapshots: { organization: string; list: SnapshotResource[] } | null = null;
let tab: Tab = 'rows';
/** The error on screen came from a history request: the next one that succeeds takes it away. */
let errorIsOurs = false;
const changes = {
  from: null as string | null,
  page: 1,
  /** The request without its page: a new one starts at page 1 again. */
  base: '',
  /** The request whose answer is on screen (no refetch for the same one). */
  drawn: '',
  body: null as ChangesBody | null,
  running: null as AbortController | null,
};
const trend = { view: '', sums: [] as string[], drawn: '', running: null as AbortController | null };

const viewOf = (q: Q.UiQuery): WebView => hooks.catalog.view(q.type) ?? hooks.catalog.defaultView;
/** The fields on screen, in the rows table's column order (all of the view's when the query names none). */
const fieldsOf = (q: Q.UiQuery): WebField[] => {
  const view = viewOf(q);
  return Q.columnOrder(view, q.fields ?? view.fields.map((f) => f.name)).map((n) => hooks.catalog.field(view, n)).filter((f): f is WebField => f !== undefined);
};

// ---------- naming snapshots ----------

/** UTC, to the second: snapshots loaded minutes apart must read apart, and anyone reading a link sees the same. */
const when = (loadedAt: string) => {
  const iso = new Date(loadedAt).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;
};
const nameOf = (s: { attributes: { label: string | null; 'loaded-at': string } }) =>
  (s.attributes.label ? `${s.attributes.label} · ${when(s.attributes['loaded-at'])}` : when(s.attributes['loaded-at']));
/** The short name under a chart's axis: the label, else month, day and time. */
const shortName = (s: { attributes: { label: string | null; 'loaded-at': string } }) =>
  s.attributes.label ?? new Date(s.attributes['loaded-at']).toISOString().slice(5, 16).replace('T', ' ');
const listed = () => snapshots?.list ?? [];
const currentId = () => listed().find((s) => s.attributes.current)?.id ?? null;

async function loadSnapshots(organization: string): Promise<SnapshotResource[]> {
  const list: SnapshotResource[] = [];
  for (let page: number | null = 1; page !== null && page <= 100;) {
    const { body }: { body: { data: SnapshotResource[]; meta: { pagination: Pagination } } } = await hooks.api.json(
      `${organizationPath(organization)}explorer/snapshots?${Q.encodePairs([['page[number]', String(page)], ['page[size]', '100']])}`);
    list.push(...body.data);
    page = body.meta.pagination['next-page'];
  }
  return list;
}

/** The list is fetched again for another organization, or once a snapshot appears that it does not have. */
function listIsStale(page: ShownPage): boolean {
  if (!snapshots || snapshots.organization !== page.organization) return true;
  if (page.snapshot !== null && !snapshots.list.some((s) => s.id === page.snapshot)) return true;
  return page.query.snapshot === undefined && page.snapshot !== null && page.snapshot !== currentId();
}

/**
 * After a 400 about the snapshot (a shared link outlives retention): the picker is usable at once, to take
 * the focus, and lists what there is to choose from as soon as the list is in.
 */
async function offerSnapshots(organization: string): Promise<void> {
  el.snapshot.disabled = false;
  const seq = shownSeq;
  try {
    const list = await loadSnapshots(organization);
    if (seq !== shownSeq) return;
    snapshots = { organization, list };
    renderPicker(null);
  } catch {
    // The query's own error is on screen already; the picker keeps what it had.
  }
}

// ---------- what app.ts calls ----------

export function initHistory(h0: HistoryHooks): void {
  hooks = h0;
  el.snapshot.addEventListener('change', () => {
    const id = el.snapshot.value;
    hooks.travel(id === '' || id === currentId() ? undefined : id);
  });
  el.changesFrom.addEventListener('change', () => {
    changes.from = el.changesFrom.value || null;
    void loadChanges();
  });
  el.changesCsv.addEventListener('click', () => {
    if (!shown || !changes.from || !shown.snapshot) return;
    void hooks.download(`${organizationPath(shown.organization)}explorer/changes/export/csv?${Q.encodePairs(changesParams(false))}`, el.changesCsv);
  });
  wirePager({ first: el.changesFirst, prev: el.changesPrev, next: el.changesNext, last: el.changesLast },
    () => changes.body?.meta.pagination, (page) => { changes.page = page; void loadChanges(); });
  wireTabs();
  renderChangesPager();
  Summary.initSummary({
    api: h0.api, catalog: h0.catalog, latest, download: h0.download,
    drill: (filters) => { selectTab('rows'); h0.drill(filters); },
  });
}

/** After every answered query: the picker, the choices of "changes since", and the open tab follow it. */
export async function showPage(page: ShownPage): Promise<void> {
  shown = page;
  errorIsOurs = false; // the query cleared every error before it ran
  const seq = ++shownSeq;
  // Across organizations there is no history (snapshots, changes and trends are each organization's): the
  // rows and their summary only.
  const across = page.organization === ALL_ORGANIZATIONS;
  for (const button of el.tabs) if (button.dataset.tab === 'changes' || button.dataset.tab === 'charts') button.hidden = across;
  if (across) {
    snapshots = null;
    renderPicker(null);
    if (tab === 'changes' || tab === 'charts') selectTab('rows');
    await Summary.showQuery(page.organization, page.query, false);
    if (tab === 'summary') await loadOpenTab();
    return;
  }
  if (listIsStale(page)) {
    try {
      const list = await loadSnapshots(page.organization);
      if (seq !== shownSeq) return;
      snapshots = { organization: page.organization, list };
    } catch (e) {
      if (seq === shownSeq) failed(e);
      return;
    }
  }
  renderPicker(page.snapshot ?? currentId());
  renderFrom();
  renderSums();
  renderBars();
  await Summary.showQuery(page.organization, page.query, false);
  await loadOpenTab();
}

/** The control a 400 about a history parameter points at. */
export function controlFor(parameter: string): HTMLElement | null {
  if (parameter === 'snapshot' || parameter === 'as_of') {
    if (hooks.organization() !== '') void offerSnapshots(hooks.organization());
    return el.snapshot;
  }
  if (['from', 'to', 'from_as_of', 'to_as_of'].includes(parameter)) return el.changesFrom;
  if (parameter === 'sum') return tab === 'summary' ? byId('summary-sums').querySelector('input') : el.sums.querySelector('input');
  return Summary.controlFor(parameter);
}

// ---------- the snapshot picker ----------

/** The picker with `on` chosen; null (or an id it does not list): a prompt to choose one. */
function renderPicker(on: string | null): void {
  const list = listed();
  if (list.length === 0) {
    el.snapshot.replaceChildren(h('option', { value: '' }, 'current'));
    el.snapshot.disabled = true;
    el.results.classList.remove('past');
    el.snapshotNote.hidden = true;
    return;
  }
  const known = list.some((s) => s.id === on);
  el.snapshot.replaceChildren(
    ...(known ? [] : [h('option', { value: '', selected: true, disabled: true }, 'choose a snapshot')]),
    ...list.map((s) => h('option', { value: s.id, selected: s.id === on }, `${nameOf(s)}${s.attributes.current ? ' (current)' : ''}`)));
  el.snapshot.disabled = false;
  const past = list.find((s) => s.id === on && !s.attributes.current);
  el.results.classList.toggle('past', past !== undefined);
  el.snapshotNote.hidden = past === undefined;
  el.snapshotNote.textContent = past ? `An older snapshot is shown: ${nameOf(past)}. Choose the current one to come back to today.` : '';
}

// ---------- tabs ----------

function wireTabs(): void {
  el.tabs.forEach((button) => {
    button.addEventListener('click', () => { selectTab(button.dataset.tab as Tab); });
    // The tab pattern: one tab stop for the whole list, arrows move between tabs.
    button.addEventListener('keydown', (ev) => {
      // Among the tabs shown (across organizations, Changes and Charts are not).
      const tabs = el.tabs.filter((b) => !b.hidden);
      const n = tabs.length;
      const at = tabs.indexOf(button);
      const j = ev.key === 'ArrowRight' ? (at + 1) % n : ev.key === 'ArrowLeft' ? (at - 1 + n) % n : ev.key === 'Home' ? 0 : ev.key === 'End' ? n - 1 : null;
      if (j === null) return;
      ev.preventDefault();
      selectTab(tabs[j]!.dataset.tab as Tab);
      focus(tabs[j]);
    });
  });
}

function selectTab(name: Tab): void {
  tab = name;
  for (const button of el.tabs) {
    const selected = button.dataset.tab === name;
    button.setAttribute('aria-selected', String(selected));
    button.tabIndex = selected ? 0 : -1;
    byId(button.getAttribute('aria-controls')!).hidden = !selected;
  }
  void loadOpenTab();
}

async function loadOpenTab(): Promise<void> {
  if (tab === 'changes') await loadChanges();
  else if (tab === 'charts') await loadTrend();
  else if (tab === 'summary') await Summary.loadSummary();
}

/** A value as a cell shows it: empty as a dash (read as "empty"), long text cut (the CSV has it whole). */
function valueNodes(value: unknown): (Node | string)[] {
  if (value === null || value === undefined) {
    return [h('span', { class: 'null' }, h('span', { 'aria-hidden': 'true' }, '—'), h('span', { class: 'sr-only' }, 'empty'))];
  }
  const text = String(value);
  return text.length > MAX_CELL_CHARS ? [text.slice(0, MAX_CELL_CHARS), h('span', { class: 'more' }, '…')] : [text];
}

function failed(e: unknown): void {
  hooks.explain(e);
  errorIsOurs = !(e instanceof DOMException && e.name === 'AbortError');
}

/** Clears an error only this module showed: a query's own error stays until the query is fixed. */
function settledError(): void {
  if (errorIsOurs) hooks.clearError();
  errorIsOurs = false;
}

function busy(panel: HTMLElement, on: boolean): void {
  if (on) panel.setAttribute('aria-busy', 'true');
  else panel.removeAttribute('aria-busy');
}

// ---------- changes since an older snapshot ----------

/** The retained snapshots older than the one shown, newest first: what the shown one can be compared with. */
function olderThanShown(): SnapshotResource[] {
  const list = listed();
  const at = list.findIndex((s) => s.id === shown?.snapshot);
  return at < 0 ? [] : list.slice(at + 1);
}

function renderFrom(): void {
  const older = olderThanShown();
  // By default the snapshot just before: "what changed in the last load".
  if (!older.some((s) => s.id === changes.from)) changes.from = older[0]?.id ?? null;
  el.changesFrom.replaceChildren(...(older.length === 0
    ? [h('option', { value: '' }, 'no older snapshot')]
    : older.map((s) => h('option', { value: s.id, selected: s.id === changes.from }, nameOf(s)))));
  el.changesFrom.disabled = older.length === 0;
  el.changesCsv.disabled = older.length === 0;
}

/** The API's parameters for the change set: the shown query (never its snapshot), then from and to. */
function changesParams(paging: boolean): Q.Pairs {
  const q: Q.UiQuery = { ...shown!.query, snapshot: undefined, page: changes.page };
  return [...Q.apiParams(hooks.catalog, q, paging ? 'all' : 'none'), ['from', changes.from!], ['to', shown!.snapshot!]];
}

async function loadChanges(): Promise<void> {
  if (tab !== 'changes' || !shown) return;
  if (!changes.from || !shown.snapshot) {
    changes.running?.abort();
    changes.body = null;
    changes.drawn = '';
    el.changesTable.tHead!.replaceChildren();
    el.changesTable.tBodies[0]!.replaceChildren();
    el.changesCaption.textContent = 'No changes to show.';
    el.changesSummary.textContent = 'This organization has no snapshot older than the one shown: nothing to compare with.';
    renderChangesPager();
    return;
  }
  const organization = shown.organization;
  const base = `${organization}\u0000${Q.encodePairs(changesParams(false))}\u0000${shown.query.size}`;
  if (base !== changes.base) {
    changes.base = base;
    changes.page = 1;
  }
  const path = `${organizationPath(organization)}explorer/changes?${Q.encodePairs(changesParams(true))}`;
  if (path === changes.drawn) return;
  await latest<ChangesBody>(changes, el.changesPanel, path, (body) => {
    changes.body = body;
    changes.drawn = path;
    renderChanges(body, organization);
  });
}

/**
 * Fetches `path` for a panel whose newest request wins: an older one still running is aborted, and only the
 * newest draws its answer or its error and clears the panel's busy state.
 */
async function latest<T>(slot: { running: AbortController | null }, panel: HTMLElement, path: string, draw: (body: T) => void): Promise<void> {
  slot.running?.abort();
  const controller = new AbortController();
  slot.running = controller;
  busy(panel, true);
  try {
    const { body } = await hooks.api.json<T>(path, { signal: controller.signal });
    if (slot.running !== controller) return;
    settledError();
    draw(body);
  } catch (e) {
    if (slot.running === controller) failed(e);
  } finally {
    if (slot.running === controller) {
      slot.running = null;
      busy(panel, false);
    }
  }
}

const CHANGE_MARKS: Record<string, string> = { added: '+', removed: '−', changed: '~' };

function renderChanges(body: ChangesBody, organization: string): void {
  const q = shown!.query;
  const view = viewOf(q);
  const fields = fieldsOf(q);
  const shownNames = new Set(fields.map((f) => f.name));
  const name = (id: string) => { const s = listed().find((x) => x.id === id); return s ? nameOf(s) : id; };
  el.changesTable.tHead!.replaceChildren(h('tr', {},
    h('th', { scope: 'col', class: 'plain' }, 'change'),
    ...fields.map((f) => h('th', { scope: 'col', class: `plain${f.type === 'number' ? ' num' : ''}`, title: f.description }, f.name))));
  const rows = body.data.map(({ id, attributes: a }) => {
    const now = a.after ?? a.before ?? {};
    const changed = new Set(a['changed-fields']);
    // A row can change only in fields that are not on screen: say which, or "changed" would explain nothing.
    const unseen = a['changed-fields'].filter((f) => !shownNames.has(f));
    const tr = h('tr', { class: `change-${a.change}`, 'data-id': id, 'data-change': a.change },
      h('td', { class: 'change' },
        h('span', { class: 'change-kind' }, h('span', { class: 'mark', 'aria-hidden': 'true' }, CHANGE_MARKS[a.change] ?? ''), a.change),
        unseen.length > 0 ? h('span', { class: 'unseen' }, ` also ${unseen.join(', ')}`) : null));
    for (const f of fields) {
      const td = h('td', { class: f.type === 'number' ? 'num' : null });
      if (a.change === 'changed' && changed.has(f.name)) {
        td.classList.add('diff');
        td.title = `${f.name} changed`;
        td.append(h('del', {}, ...valueNodes(a.before?.[f.attribute])), h('span', { class: 'arrow' }, ' → '), h('ins', {}, ...valueNodes(a.after?.[f.attribute])));
      } else {
        td.append(...valueNodes(now[f.attribute]));
      }
      tr.append(td);
    }
    return tr;
  });
  el.changesTable.tBodies[0]!.replaceChildren(...rows);
  const { counts, pagination: p } = body.meta;
  const total = counts.added + counts.removed + counts.changed;
  el.changesSummary.textContent = `From ${name(body.meta.from)} to ${name(body.meta.to)}: `
    + `${formatCount(counts.added)} added, ${formatCount(counts.removed)} removed, ${formatCount(counts.changed)} changed.`;
  el.changesCaption.textContent = total === 0
    ? `No ${view.name} rows of ${organization} matching the query changed.`
    : `Changed ${view.name} rows of ${organization}: page ${formatCount(p['current-page'])} of ${formatCount(p['total-pages'])}, ${formatCount(total)} changes`;
  renderChangesPager();
}

function renderChangesPager(): void {
  const p = changes.body?.meta.pagination;
  el.changesFirst.disabled = !p || p['current-page'] <= 1;
  el.changesPrev.disabled = !p || p['prev-page'] === null;
  el.changesNext.disabled = !p || p['next-page'] === null;
  el.changesLast.disabled = !p || p['current-page'] >= p['total-pages'];
  el.changesPageInfo.textContent = p && p['total-count'] > 0 ? `Page ${formatCount(p['current-page'])} of ${formatCount(p['total-pages'])}` : '';
  const active = document.activeElement;
  if (active instanceof HTMLButtonElement && active.disabled && active.closest('#panel-changes .pager')) {
    focus([el.changesNext, el.changesPrev, el.changesLast, el.changesFirst].find((b) => !b.disabled) ?? el.changesFrom);
  }
}

// ---------- the trend ----------

function renderSums(): void {
  if (!shown) return;
  const view = viewOf(shown.query);
  const numbers = view.fields.filter((f) => f.type === 'number');
  el.sumsBox.hidden = numbers.length === 0;
  if (trend.view === view.name) return;
  trend.view = view.name;
  trend.sums = trend.sums.filter((n) => numbers.some((f) => f.name === n));
  el.sums.replaceChildren(...numbers.map((f) => {
    const id = `sum-${f.name}`;
    const box = h('input', { type: 'checkbox', id, value: f.name, checked: trend.sums.includes(f.name) });
    box.addEventListener('change', () => {
      // In the view's order, whatever the order of clicks: the same choice is the same request.
      trend.sums = [...el.sums.querySelectorAll<HTMLInputElement>('input:checked')].map((b) => b.value);
      limitSums();
      void loadTrend();
    });
    return h('div', { class: 'check' }, box, h('label', { for: id, title: f.description }, f.name));
  }));
  limitSums();
}

/** The API sums at most five fields: the other boxes wait until one is unchecked. */
function limitSums(): void {
  const full = trend.sums.length >= hooks.catalog.data.summary.maxSums;
  for (const box of el.sums.querySelectorAll<HTMLInputElement>('input')) box.disabled = full && !box.checked;
}

async function loadTrend(): Promise<void> {
  if (tab !== 'charts' || !shown) return;
  const organization = shown.organization;
  // Only the filters count: fields, sort and paging do not change how many rows match.
  const q: Q.UiQuery = { ...shown.query, fields: null, sort: [], snapshot: undefined };
  const sums = [...trend.sums];
  const pairs = Q.apiParams(hooks.catalog, q, 'none');
  if (sums.length > 0) pairs.push(['sum', sums.join(',')]);
  const path = `${organizationPath(organization)}explorer/trend?${Q.encodePairs(pairs)}`;
  // A snapshot loaded since adds a point: the same request is fetched again then.
  const key = `${path}\u0000${listed().map((s) => s.id).join(',')}\u0000${shown.snapshot}`;
  if (key === trend.drawn) return;
  await latest<TrendBody>(trend, el.chartsPanel, path, (body) => {
    trend.drawn = key;
    renderTrend(body, q.type, sums);
  });
}

function renderTrend(body: TrendBody, viewName: string, sums: string[]): void {
  const on = shown?.snapshot ?? null;
  const series = [
    { title: `Rows of ${viewName} matching the query`, column: 'count', values: body.data.map((p) => p.attributes.count as number | null) },
    ...sums.map((f) => ({ title: `Sum of ${f}`, column: `sum of ${f}`, values: body.data.map((p) => p.attributes.sums?.[f] ?? null) })),
  ];
  const figures = series.map((s) => {
    const points: TrendPoint[] = body.data.map((p, i) => ({ label: shortName(p), value: s.values[i]!, current: p.id === on }));
    return h('figure', { class: 'chart-figure' }, h('figcaption', {}, s.title), trendChart(points, s.title));
  });
  const table = valuesTable(
    `${series.map((s) => s.title).join('; ')}, per snapshot, oldest first`,
    ['snapshot', 'loaded at', ...series.map((s) => s.column)],
    body.data.map((p, i) => [p.attributes.label ?? '', when(p.attributes['loaded-at']), ...series.map((s) => s.values[i]!)]),
    [false, false, ...series.map(() => true)]);
  table.id = 'trend-table';
  table.classList.add('sr-only');
  el.trend.replaceChildren(...figures, table);
  const counts = body.data.map((p) => p.attributes.count);
  el.trendSummary.textContent = body.data.length === 0 ? 'No snapshots.'
    : `${formatCount(body.data.length)} snapshot${body.data.length === 1 ? '' : 's'}; matching rows from ${formatCount(counts[0]!)} to ${formatCount(counts[counts.length - 1]!)}.`
      + `${on && body.data.some((p) => p.id === on) ? ' The larger point is the snapshot shown.' : ''}`;
}

// ---------- bars of the rows shown ----------

/** How a row of a counting view is named on its bar. */
function barLabel(view: string, row: { id: string; attributes: Attributes }): string {
  const a = row.attributes;
  const text = (v: unknown) => (v === null || v === undefined || v === '' ? null : String(v));
  const parts = view === 'tf_versions' ? [text(a.version)] : [text(a.name), text(a.version)];
  const label = parts.filter((p) => p !== null).join(' ');
  return label !== '' ? label : text(a.source) ?? row.id;
}

function renderBars(): void {
  const q = shown?.query;
  const counting = q !== undefined && COUNT_VIEWS.includes(q.type);
  el.bars.hidden = !counting;
  if (!counting || !shown) {
    el.barChart.replaceChildren();
    return;
  }
  const view = viewOf(q);
  const field = hooks.catalog.field(view, 'workspace_count');
  el.barsHeading.textContent = `workspace_count of the ${view.name} rows shown`;
  if (!field || !fieldsOf(q).includes(field)) {
    el.barChart.replaceChildren(h('p', { class: 'hint' }, 'Choose the workspace_count field (under Fields) to chart it.'));
    return;
  }
  const labels = shown.rows.map((r) => barLabel(view.name, r));
  // Rows can share a name and version (another source or registry type): the row number tells them apart.
  const bars = shown.rows.map((r, i) => ({
    label: labels.indexOf(labels[i]!) !== labels.lastIndexOf(labels[i]!) ? `${labels[i]} · row ${i + 1}` : labels[i]!,
    value: Number(r.attributes[field.attribute] ?? 0),
  }));
  const title = `workspace_count of the ${formatCount(bars.length)} ${view.name} rows shown, in the table's order`;
  const table = valuesTable(title, [view.name === 'tf_versions' ? 'version' : 'name and version', 'workspace_count'],
    bars.map((b) => [b.label, b.value]), [false, true]);
  table.id = 'bar-table';
  table.classList.add('sr-only');
  el.barChart.replaceChildren(bars.length === 0 ? h('p', { class: 'hint' }, 'No rows to chart.') : barChart(bars, title), table);
}
