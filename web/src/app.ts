// The explorer page: plain DOM over the explorer API. One page of rows is fetched at a time, whatever the
// size of the organization; the CSV is fetched with the token and handed to the browser as a Blob. The
// query lives in the URL fragment (shareable), the token in session storage (never in the URL).
import { ALL_ORGANIZATIONS, Api, ApiProblem, filenameOf, organizationPath, type Problem } from './api.js';
import { Catalog, loadCatalog, type FieldType, type WebField, type WebView } from './catalog.js';
import { byId, focus, formatBytes, formatCount, h } from './dom.js';
import * as History from './history.js';
import { notificationsPanel, type NotificationsPanel } from './notifications.js';
import * as Q from './query.js';

const TOKEN_KEY = 'explorer.token';
const ORG_KEY = 'explorer.organization';
/** Longer cell values are cut in the table (the CSV has them whole), so that huge lists stay cheap. */
const MAX_CELL_CHARS = 300;

interface Row { id: string; type: string; attributes: Record<string, unknown> }
interface Pagination {
  'current-page': number; 'page-size': number; 'next-page': number | null; 'prev-page': number | null;
  'total-pages': number; 'total-count': number;
}
interface PageBody {
  data: Row[];
  links: { self: string; first: string; last: string; prev: string | null; next: string | null };
  meta: { pagination: Pagination };
}

/** What the user was doing when a request failed: decides where the message points. */
type Action = 'query' | 'page' | 'csv' | 'list' | 'open' | 'save' | 'update' | 'rename' | 'delete' | 'notify';

const el = {
  form: byId<HTMLFormElement>('query-form'),
  token: byId<HTMLInputElement>('token'),
  tokenShow: byId<HTMLButtonElement>('token-show'),
  tokenForget: byId<HTMLButtonElement>('token-forget'),
  org: byId<HTMLInputElement>('org'),
  orgChoices: byId<HTMLDataListElement>('org-choices'),
  orgHint: byId('org-hint'),
  view: byId<HTMLSelectElement>('view'),
  viewDesc: byId('view-desc'),
  filters: byId<HTMLOListElement>('filters'),
  filtersEmpty: byId('filters-empty'),
  addFilter: byId<HTMLButtonElement>('add-filter'),
  fieldsBox: byId<HTMLDetailsElement>('fields-box'),
  fieldsCount: byId('fields-count'),
  fields: byId('fields'),
  fieldsAll: byId<HTMLButtonElement>('fields-all'),
  fieldsNone: byId<HTMLButtonElement>('fields-none'),
  run: byId<HTMLButtonElement>('run'),
  saveForm: byId<HTMLFormElement>('save-form'),
  saveName: byId<HTMLInputElement>('save-name'),
  saveUpdate: byId<HTMLButtonElement>('save-update'),
  savedList: byId<HTMLUListElement>('saved-list'),
  savedEmpty: byId('saved-empty'),
  results: byId('results'),
  resultsHeading: byId('results-heading'),
  status: byId('status'),
  error: byId('error'),
  table: byId<HTMLTableElement>('results-table'),
  caption: byId('results-caption'),
  download: byId<HTMLButtonElement>('download'),
  downloadFormat: byId<HTMLSelectElement>('download-format'),
  copyLink: byId<HTMLButtonElement>('copy-link'),
  first: byId<HTMLButtonElement>('page-first'),
  prev: byId<HTMLButtonElement>('page-prev'),
  next: byId<HTMLButtonElement>('page-next'),
  last: byId<HTMLButtonElement>('page-last'),
  pageInfo: byId('page-info'),
  pageSize: byId<HTMLInputElement>('page-size'),
};

let catalog: Catalog;
let api: Api;
let notifications: NotificationsPanel;
/** The saved view the Notifications panel shows, if any. */
let notifiedView: string | null = null;
/** The query being edited (controls write into it). */
let query: Q.UiQuery;
/** The query whose rows are on screen, and its organization. */
let shown: { query: Q.UiQuery; organization: string; page: PageBody } | null = null;
let running: AbortController | null = null;
let openSaved: Q.SavedViewResource | null = null;
let saved: { organization: string; views: Q.SavedViewResource[] } | null = null;
/** The token changed since the list was fetched. */
let savedStale = false;
/** The saved view whose item is being renamed or asked to confirm deletion. */
let editing: { id: string; mode: 'rename' | 'delete' } | null = null;
/** The URL fragment this page wrote last, so that its own history entries are not re-applied. */
let lastHash = '';
/** The token the organization picker's choices were asked for. */
let offeredFor: string | null = null;
/** A column header to focus again once the table is redrawn (after sorting with the keyboard). */
let refocusSort: string | null = null;

const viewOf = (q: Q.UiQuery): WebView => catalog.view(q.type) ?? catalog.defaultView;
const organization = () => el.org.value.trim();
/** The picker reads "All organizations": the queries go to the cross-organization routes. */
const acrossOrganizations = () => organization() === ALL_ORGANIZATIONS;

/**
 * The catalog follows the picker: across organizations every view has organization_name first. What the
 * query names that the new reading lacks (organization_name of a view that has none of its own) is dropped.
 */
function followPicker(): void {
  if (catalog.across === acrossOrganizations()) return;
  catalog.across = acrossOrganizations();
  const view = viewOf(query);
  const known = (name: string) => catalog.field(view, name.replace(/^-/, '')) !== undefined;
  query.filters = query.filters.filter((f) => known(f.field));
  query.sort = query.sort.filter(known);
  if (query.fields) query.fields = query.fields.filter(known);
  if (query.fields?.length === 0) query.fields = null;
  query.snapshot = undefined;
  renderQueryControls();
}

/**
 * Offers the organizations the token reaches in the picker, and "All organizations" first when it reaches
 * more than one (the cross-organization summary of workspaces by organization names them; the
 * X-Explorer-Organizations header counts them, those without workspaces too).
 */
async function offerOrganizations(): Promise<void> {
  try {
    const { body, response } = await api.json<{ data: { attributes: Record<string, unknown> }[] }>(
      `explorer/summary?${Q.encodePairs([['type', 'workspaces'], ['group_by', 'organization_name'], ['sort', 'organization_name'], ['page[size]', '100']])}`);
    const reached = Number(response.headers.get('X-Explorer-Organizations') ?? '0');
    const names = body.data.map((g) => String(g.attributes['organization-name']));
    const choices = reached > 1 ? [ALL_ORGANIZATIONS, ...names] : names;
    el.orgChoices.replaceChildren(...choices.map((name) => h('option', { value: name })));
    el.orgHint.hidden = reached <= 1;
    el.orgHint.textContent = reached > 1 ? `This token reaches ${formatCount(reached)} organizations: choose “${ALL_ORGANIZATIONS}” to query them together.` : '';
  } catch {
    // Only suggestions: the field still takes any name; the next focus asks again.
    offeredFor = null;
    el.orgChoices.replaceChildren();
    el.orgHint.hidden = true;
  }
}
const tokenValue = () => el.token.value.trim();

// ---------- messages ----------

function say(text: string): void {
  el.status.textContent = text;
}

function clearError(): void {
  el.error.hidden = true;
  el.error.replaceChildren();
  for (const invalid of document.querySelectorAll('[aria-invalid="true"]')) invalid.removeAttribute('aria-invalid');
}

/** Shows an error (read at once by screen readers: role=alert) and moves the focus to what to fix. */
function showError(title: string, message: string, target?: HTMLElement | null, code?: string): void {
  el.error.replaceChildren(h('p', { class: 'error-title' }, title), h('p', {}, message));
  if (code) el.error.append(h('p', {}, code.startsWith('/') ? 'Member: ' : 'Parameter: ', h('code', {}, code)));
  el.error.hidden = false;
  if (target) {
    target.setAttribute('aria-invalid', 'true');
    if (target.closest('details') instanceof HTMLDetailsElement) (target.closest('details') as HTMLDetailsElement).open = true;
    focus(target);
  }
}

const clock = (seconds: number) => new Date(Date.now() + seconds * 1000).toLocaleTimeString('en-GB');

/** The control a 400's parameter or a 422's pointer names, when the page has one. */
function controlFor(problem: Problem, action: Action): HTMLElement | null {
  const filterIndex = (i: number) =>
    document.getElementById(`filter-${i}-value-0`) ?? document.getElementById(`filter-${i}-operator`) ?? document.getElementById(`filter-${i}-field`);
  const p = problem.parameter;
  if (p !== undefined) {
    const history = History.controlFor(p);
    if (history) return history;
    const m = /^filter\[(\d+)\]/.exec(p);
    if (m) return filterIndex(Number(m[1]));
    if (p.startsWith('fields')) return el.fields.querySelector('input');
    if (p === 'sort') return el.table.querySelector('thead button');
    if (p === 'page[size]') return el.pageSize;
    if (p === 'type') return el.view;
    return null;
  }
  const ptr = problem.pointer;
  if (ptr !== undefined) {
    if (/\/name$/.test(ptr)) {
      if (action === 'rename') return el.savedList.querySelector<HTMLInputElement>('.rename input');
      return el.saveName;
    }
    const m = /\/query\/filter\/(\d+)/.exec(ptr);
    if (m) return filterIndex(Number(m[1]));
    if (/\/query\/fields/.test(ptr)) return el.fields.querySelector('input');
    if (/query[-_]type/.test(ptr)) return el.view;
  }
  return null;
}

function explain(e: unknown, action: Action): void {
  if (e instanceof DOMException && e.name === 'AbortError') return;
  if (!(e instanceof ApiProblem)) {
    showError('Cannot reach the explorer service', `${(e as Error).message ?? String(e)}. Check the connection and try again.`);
    say('The request failed.');
    return;
  }
  const p = e.problem;
  const detail = p.detail ? ` The API says: “${p.detail}”` : '';
  say(`The request failed (${p.status}).`);
  switch (p.status) {
    case 401:
      showError('The token is invalid or expired',
        `The API did not accept this token: it is unknown, revoked, expired or mistyped.${detail} Paste a valid API token and try again.`, el.token);
      return;
    case 404:
      if (action === 'open' || action === 'rename' || action === 'delete' || action === 'update') {
        showError('Saved view not found', `This saved view no longer exists (someone may have deleted it).${detail}`);
        void loadSaved();
        return;
      }
      showError('Organization not found',
        `The organization “${organization()}” does not exist, or this token may not see it.${detail}`, el.org);
      return;
    case 429: {
      const wait = p.retryAfter;
      showError('Too many requests',
        wait !== undefined
          ? `The rate limit for this token is used up. Retry in ${wait} s (at ${clock(wait)}).${detail}`
          : `The rate limit for this token is used up. Wait a moment, then retry.${detail}`);
      return;
    }
    case 504:
      showError('The query timed out',
        `The query ran too long and was stopped.${detail} Narrow the filters (for example by project, name or version) or choose fewer fields, then run it again.`,
        el.addFilter);
      return;
    case 503: {
      const wait = p.retryAfter;
      showError('The service is busy or unavailable', `${p.detail || 'Try again shortly.'}${wait !== undefined ? ` Retry in ${wait} s (at ${clock(wait)}).` : ''}`);
      return;
    }
    case 400:
    case 422: {
      const where = p.parameter ?? p.pointer;
      const title = p.status === 422 ? 'The saved view was not accepted' : 'The query was not accepted';
      showError(title, p.detail || p.title, controlFor(p, action), where);
      return;
    }
    default:
      showError(`The request failed: ${p.status} ${p.title}`, `${p.detail}${p.requestId ? ` Request id ${p.requestId}.` : ''}`);
  }
}

// ---------- the query form ----------

const OPERATOR_LABELS: Record<string, string> = {
  is: 'is', is_not: 'is not', contains: 'contains', 'does not contain': 'does not contain',
  is_empty: 'is empty', is_not_empty: 'is not empty', gt: 'greater than', lt: 'less than',
  gteq: 'at least', lteq: 'at most', is_before: 'is before', is_after: 'is after',
};
const operatorLabel = (op: string) => OPERATOR_LABELS[op] ?? op.replace(/_/g, ' ');

const VALUE_HINTS: Record<FieldType, string> = {
  string: 'Text; “is” compares exactly, “contains” ignores case.',
  number: 'A number, e.g. 42 or -1.5.',
  boolean: 'true or false.',
  datetime: 'A date or time in ISO 8601, e.g. 2024-01-31 or 2024-01-31T12:00:00Z (UTC unless an offset is given).',
};

function renderViewSelect(): void {
  el.view.replaceChildren(...catalog.views.map((v) => h('option', { value: v.name }, v.name)));
}

function renderQueryControls(): void {
  const view = viewOf(query);
  el.view.value = view.name;
  el.viewDesc.textContent = view.description;
  el.pageSize.value = String(query.size);
  el.pageSize.max = String(catalog.data.page.maxSize);
  renderFilters();
  renderFields();
  renderSaveControls();
}

function renderFilters(focusId?: string): void {
  const view = viewOf(query);
  el.filters.replaceChildren(...query.filters.map((f, i) => filterItem(view, f, i)));
  el.filtersEmpty.hidden = query.filters.length > 0;
  if (focusId) focus(document.getElementById(focusId));
}

function filterItem(view: WebView, f: Q.Filter, i: number): HTMLLIElement {
  const n = i + 1;
  const field: WebField | undefined = catalog.field(view, f.field);
  const type: FieldType = field?.type ?? 'string';
  const fieldSelect = h('select', {
    id: `filter-${i}-field`, 'aria-label': `Field of filter ${n}`,
    onchange: () => {
      const next = catalog.field(view, fieldSelect.value)!;
      const typeChanged = next.type !== type;
      f.field = next.name;
      if (!catalog.operators(next.type).includes(f.operator)) f.operator = catalog.operators(next.type)[0]!;
      if (typeChanged) f.values = Q.initialValues(catalog, next.type, f.operator);
      renderFilters(`filter-${i}-field`);
    },
  }, ...view.fields.map((fd) => h('option', { value: fd.name, selected: fd.name === f.field, title: fd.description }, fd.name)));
  const operatorSelect = h('select', {
    id: `filter-${i}-operator`, 'aria-label': `Operator of filter ${n}`,
    onchange: () => {
      f.operator = operatorSelect.value;
      if (catalog.ignoresValue(f.operator)) f.values = [];
      else if (f.values.length === 0) f.values = Q.initialValues(catalog, type, f.operator);
      renderFilters(`filter-${i}-operator`);
    },
  }, ...catalog.operators(type).map((op) => h('option', { value: op, selected: op === f.operator }, operatorLabel(op))));

  const hintId = `filter-${i}-hint`;
  const values: HTMLElement[] = [];
  if (!catalog.ignoresValue(f.operator)) {
    f.values.forEach((value, j) => {
      const id = `filter-${i}-value-${j}`;
      const label = f.values.length > 1 ? `Value ${j + 1} of filter ${n}` : `Value of filter ${n}`;
      let input: HTMLInputElement | HTMLSelectElement;
      if (type === 'boolean') {
        input = h('select', { id, 'aria-label': label, 'aria-describedby': hintId },
          ...['true', 'false'].map((b) => h('option', { value: b, selected: value.toLowerCase() === b }, b)));
        input.addEventListener('change', () => { f.values[j] = input.value; });
      } else {
        input = h('input', {
          id, type: 'text', value, 'aria-label': label, 'aria-describedby': hintId, spellcheck: 'false', autocomplete: 'off',
          inputmode: type === 'number' ? 'decimal' : null,
          placeholder: type === 'datetime' ? 'YYYY-MM-DD[THH:MM:SSZ]' : type === 'number' ? '0' : null,
        });
        input.addEventListener('input', () => {
          f.values[j] = input.value;
          // A hint only; the API decides (and explains) what it accepts.
          const looksWrong = input.value !== '' && !catalog.valueLooksValid(type, input.value);
          input.classList.toggle('suspect', looksWrong);
        });
      }
      values.push(h('span', { class: 'value' }, input,
        f.values.length > 1 ? h('button', {
          type: 'button', class: 'small', 'aria-label': `Remove value ${j + 1} of filter ${n}`,
          onclick: () => { f.values.splice(j, 1); renderFilters(`filter-${i}-value-${Math.max(0, j - 1)}`); },
        }, '×') : null));
    });
    values.push(h('button', {
      type: 'button', class: 'small', 'aria-label': `Add another value to filter ${n}`,
      onclick: () => { f.values.push(type === 'boolean' ? 'false' : ''); renderFilters(`filter-${i}-value-${f.values.length - 1}`); },
    }, catalog.isNegative(f.operator) ? '+ nor' : '+ or'));
  }
  const hint = catalog.ignoresValue(f.operator)
    ? 'No value needed.'
    : `${VALUE_HINTS[type]}${f.values.length > 1 ? (catalog.isNegative(f.operator) ? ' None of the values may match.' : ' Any of the values may match.') : ''}`;
  return h('li', { class: 'filter' },
    h('fieldset', {},
      h('legend', {}, `Filter ${n}`),
      h('div', { class: 'filter-line' }, fieldSelect, h('button', {
        type: 'button', class: 'small', 'aria-label': `Remove filter ${n}`, title: `Remove filter ${n}`,
        onclick: () => {
          query.filters.splice(i, 1);
          renderFilters(query.filters.length > 0 ? `filter-${Math.min(i, query.filters.length - 1)}-field` : 'add-filter');
        },
      }, '×')),
      h('div', { class: 'filter-values' }, operatorSelect, ...values),
      h('p', { id: hintId, class: 'hint' }, hint)));
}

function renderFields(): void {
  const view = viewOf(query);
  const chosen = new Set(query.fields ?? view.fields.map((f) => f.name));
  el.fields.replaceChildren(...view.fields.map((f) => {
    const id = `field-${f.name}`;
    const box = h('input', { type: 'checkbox', id, value: f.name, checked: chosen.has(f.name) });
    box.addEventListener('change', () => { setFields(checkedFields()); });
    return h('div', { class: 'check' }, box, h('label', { for: id, title: f.description }, f.name));
  }));
  updateFieldsCount();
}

function checkedFields(): string[] {
  return [...el.fields.querySelectorAll<HTMLInputElement>('input[type=checkbox]')].filter((b) => b.checked).map((b) => b.value);
}

function setFields(names: string[]): void {
  const view = viewOf(query);
  // Catalog order, except that a query opened with its own order keeps it for the names it still has.
  const ordered = query.fields ? [...query.fields.filter((n) => names.includes(n)), ...names.filter((n) => !query.fields!.includes(n))] : names;
  query.fields = Q.isEveryField(ordered, view) ? null : ordered;
  updateFieldsCount();
}

function updateFieldsCount(): void {
  const view = viewOf(query);
  const n = query.fields ? query.fields.length : view.fields.length;
  el.fieldsCount.textContent = `(${n} of ${view.fields.length})`;
}

// ---------- running a query ----------

function writeUrl(push: boolean): void {
  const hash = `#${Q.linkOf(catalog, organization(), query, showsSaved() ? openSaved!.id : null)}`;
  if (location.hash === hash) return;
  lastHash = hash;
  if (push) history.pushState(null, '', hash);
  else history.replaceState(null, '', hash);
}

/** The open saved view's query is the one shown, unedited: the page's address then names the view (`view=`). */
function showsSaved(): boolean {
  if (openSaved === null) return false;
  const saved = { ...Q.queryOfSaved(catalog, openSaved, query.size), page: query.page, ...(query.snapshot ? { snapshot: query.snapshot } : {}) };
  return Q.linkOf(catalog, organization(), saved) === Q.linkOf(catalog, organization(), query);
}

/** Checks what the API cannot judge for us; returns false after pointing at the problem. */
function ready(): boolean {
  clearError();
  if (tokenValue() === '') {
    showError('No token', 'Paste an API token first: it is sent with every request and kept in this tab only.', el.token);
    return false;
  }
  if (organization() === '') {
    showError('No organization', 'Enter the name of the organization to query.', el.org);
    return false;
  }
  if (query.fields !== null && query.fields.length === 0) {
    showError('No fields', 'Choose at least one field to show.', el.fields.querySelector('input'));
    return false;
  }
  return true;
}

async function runQuery(opts: { push: boolean; action?: Action }): Promise<void> {
  if (!ready()) return;
  const org = organization();
  localStorage.setItem(ORG_KEY, org);
  writeUrl(opts.push);
  running?.abort();
  const controller = new AbortController();
  running = controller;
  const ran = Q.cloneQuery(query);
  el.results.setAttribute('aria-busy', 'true');
  say('Loading…');
  const started = performance.now();
  try {
    const params = Q.encodePairs(Q.apiParams(catalog, ran, 'all'));
    const { body, response } = await api.json<PageBody>(`${organizationPath(org)}explorer?${params}`, { signal: controller.signal });
    if (running !== controller) return;
    shown = { query: ran, organization: org, page: body };
    renderTable();
    renderPager();
    const p = body.meta.pagination;
    const from = p['total-count'] === 0 ? 0 : (p['current-page'] - 1) * p['page-size'] + 1;
    const to = Math.min(p['total-count'], from + body.data.length - 1);
    const snapshot = response.headers.get('X-Explorer-Snapshot');
    // Still busy until the picker and the open history tab follow: a test (or a user) waits for both.
    await History.showPage({ organization: org, query: ran, snapshot, rows: body.data });
    if (running !== controller) return;
    say(`${p['total-count'] === 0 ? 'No rows match.' : `Rows ${formatCount(from)}–${formatCount(to)} of ${formatCount(p['total-count'])}.`} `
      + `Page ${formatCount(p['current-page'])} of ${formatCount(p['total-pages'])}, ${Math.round(performance.now() - started)} ms`
      + `${snapshot ? `, snapshot ${snapshot}` : ''}.${openSaved ? ` Saved view “${openSaved.attributes.name}”.` : ''}`);
    if (savedStale || saved?.organization !== org) void loadSaved();
  } catch (e) {
    if (running === controller) explain(e, opts.action ?? 'query');
  } finally {
    if (running === controller) {
      running = null;
      el.results.removeAttribute('aria-busy');
    }
  }
}

function renderTable(): void {
  if (!shown) return;
  const { query: q, page } = shown;
  const view = viewOf(q);
  const fields = Q.columnOrder(view, q.fields ?? view.fields.map((f) => f.name)).map((n) => catalog.field(view, n) ?? { name: n, attribute: n.replace(/_/g, '-'), type: 'string' as FieldType, version: false, description: '' });
  const keys = Q.sortKeysOf(q, view);
  const head = h('tr', {}, ...fields.map((f) => {
    const state = Q.sortStateOf(keys, f.name);
    const th = h('th', { scope: 'col', class: f.type === 'number' ? 'num' : null });
    if (state?.position === 0) th.setAttribute('aria-sort', state.descending ? 'descending' : 'ascending');
    const arrow = state ? (state.descending ? '▼' : '▲') : '↕';
    const button = h('button', {
      type: 'button', class: `sort${state ? ' sorted' : ''}`, 'data-field': f.name, title: `${f.description} Sort by ${f.name}; Shift adds a further sort key.`,
      onclick: (ev: Event) => { sortBy(f.name, (ev as MouseEvent).shiftKey); },
    }, f.name, h('span', { class: 'arrow', 'aria-hidden': 'true' }, arrow, state && keys.length > 1 ? String(state.position + 1) : ''),
    state && state.position > 0 ? h('span', { class: 'sr-only' }, ` (sort key ${state.position + 1}, ${state.descending ? 'descending' : 'ascending'})`) : null);
    th.append(button);
    return th;
  }));
  const body = document.createDocumentFragment();
  for (const row of page.data) {
    const tr = h('tr', {});
    for (const f of fields) tr.append(cell(row.attributes[f.attribute], f.type));
    body.append(tr);
  }
  el.table.tHead!.replaceChildren(head);
  el.table.tBodies[0]!.replaceChildren(body);
  const p = page.meta.pagination;
  el.caption.textContent = `${view.name} of ${shown.organization === ALL_ORGANIZATIONS ? 'all organizations' : shown.organization}: page ${formatCount(p['current-page'])} of ${formatCount(p['total-pages'])}, ${formatCount(p['total-count'])} rows, sorted by ${keys.join(', ')}`;
  if (refocusSort) {
    focus(el.table.querySelector<HTMLButtonElement>(`thead button[data-field="${CSS.escape(refocusSort)}"]`));
    refocusSort = null;
  }
}

function cell(value: unknown, type: FieldType): HTMLTableCellElement {
  const td = h('td', { class: type === 'number' ? 'num' : null });
  if (value === null || value === undefined) {
    td.append(h('span', { class: 'null' }, h('span', { 'aria-hidden': 'true' }, '—'), h('span', { class: 'sr-only' }, 'empty')));
    return td;
  }
  const text = String(value);
  if (text.length > MAX_CELL_CHARS) {
    td.append(text.slice(0, MAX_CELL_CHARS), h('span', { class: 'more' }, `… ${formatCount(text.length - MAX_CELL_CHARS)} more characters (the CSV has them all)`));
  } else {
    td.append(text);
  }
  return td;
}

function renderPager(): void {
  const p = shown?.page.meta.pagination;
  const links = shown?.page.links;
  el.first.disabled = !p || p['current-page'] <= 1;
  el.prev.disabled = !links?.prev;
  el.next.disabled = !links?.next;
  el.last.disabled = !p || p['current-page'] >= p['total-pages'];
  el.pageInfo.textContent = p ? `Page ${formatCount(p['current-page'])} of ${formatCount(p['total-pages'])}` : '';
  // A button that just became disabled would drop the keyboard focus on the page body.
  const active = document.activeElement;
  if (active instanceof HTMLButtonElement && active.disabled && active.closest('.pager')) {
    focus([el.next, el.prev, el.last, el.first].find((b) => !b.disabled) ?? el.pageSize);
  }
}

/** The page number a JSON:API link points at (`page[number]`), else the meta's. */
function pageOfLink(link: string | null | undefined, fallback: number | null): number | null {
  if (link) {
    const n = Number(new URL(link, location.href).searchParams.get('page[number]'));
    if (Number.isSafeInteger(n) && n >= 1) return n;
  }
  return fallback;
}

function goToPage(which: 'first' | 'prev' | 'next' | 'last'): void {
  if (!shown) return;
  const { links, meta: { pagination: p } } = shown.page;
  const target = which === 'first' ? pageOfLink(links.first, 1)
    : which === 'prev' ? pageOfLink(links.prev, p['prev-page'])
      : which === 'next' ? pageOfLink(links.next, p['next-page'])
        : pageOfLink(links.last, p['total-pages']);
  if (target === null) return;
  // Pages move through what is on screen, not through unapplied edits of the form.
  query = { ...Q.cloneQuery(shown.query), page: target, size: query.size };
  renderQueryControls();
  void runQuery({ push: true, action: 'page' });
}

function sortBy(field: string, additive: boolean): void {
  const base = shown?.query ?? query;
  const keys = Q.toggleSort(Q.sortKeysOf(base, viewOf(base)), field, additive);
  query.sort = keys;
  query.page = 1;
  refocusSort = field;
  void runQuery({ push: true });
}

// ---------- exports ----------

const FORMAT_NAMES: Record<string, string> = { csv: 'CSV', parquet: 'Parquet file', ndjson: 'NDJSON' };

/**
 * The query's export in the chosen format (CSV, Parquet or NDJSON), or another CSV export of the API
 * (`path`, such as the changes'), saved by the browser.
 */
async function downloadCsv(path?: string, button = el.download): Promise<void> {
  if (!ready()) return;
  const org = organization();
  const q = shown && shown.organization === org ? shown.query : query;
  const format = path === undefined ? el.downloadFormat.value : 'csv';
  const what = FORMAT_NAMES[format] ?? 'CSV';
  button.disabled = true;
  button.setAttribute('aria-busy', 'true');
  say(`Preparing the ${what}…`);
  try {
    const params = Q.encodePairs(Q.apiParams(catalog, q, 'none'));
    const res = await api.request(path ?? `${organizationPath(org)}explorer/export/${format}?${params}`);
    const name = filenameOf(res.headers.get('Content-Disposition')) ?? `${org}-${q.type}.${format}`;
    const chunks: Uint8Array[] = [];
    let bytes = 0;
    let lastReport = performance.now();
    const reader = res.body!.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      bytes += value.byteLength;
      if (performance.now() - lastReport > 500) {
        lastReport = performance.now();
        say(`Downloading the ${what}… ${formatBytes(bytes)}`);
      }
    }
    const url = URL.createObjectURL(new Blob(chunks as BlobPart[], { type: res.headers.get('Content-Type') ?? 'application/octet-stream' }));
    const link = h('a', { href: url, download: name, hidden: true });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60_000);
    say(`Downloaded ${name} (${formatBytes(bytes)}).`);
  } catch (e) {
    explain(e, 'csv');
  } finally {
    button.disabled = false;
    button.removeAttribute('aria-busy');
  }
}

// ---------- saved views ----------

const viewsPath = (org = organization()) => `${organizationPath(org)}explorer/views`;
/** The organization the listed saved views belong to: their operations go there, whatever the field says now. */
const listedOrganization = () => saved?.organization ?? organization();

async function loadSaved(): Promise<void> {
  const org = organization();
  if (org === '' || tokenValue() === '') return;
  if (acrossOrganizations()) {
    // Saved views belong to one organization each.
    saved = null;
    openSaved = null;
    renderSaved();
    renderSaveControls();
    return;
  }
  try {
    const views: Q.SavedViewResource[] = [];
    for (let page: number | null = 1; page !== null && page <= 100;) {
      const { body }: { body: { data: Q.SavedViewResource[]; meta: { pagination: Pagination } } } = await api.json(
        `${viewsPath()}?${Q.encodePairs([['page[number]', String(page)], ['page[size]', '100']])}`);
      views.push(...body.data);
      page = body.meta.pagination['next-page'];
    }
    saved = { organization: org, views };
    savedStale = false;
    if (openSaved && !views.some((v) => v.id === openSaved!.id)) openSaved = null;
    renderSaved();
    renderSaveControls();
  } catch (e) {
    explain(e, 'list');
  }
}

function renderSaveControls(): void {
  const compatible = openSaved !== null && openSaved.attributes['query-type'] === query.type;
  el.saveUpdate.hidden = !compatible;
  if (compatible) el.saveUpdate.textContent = `Update “${openSaved!.attributes.name}”`;
}

/** The Notifications panel follows the open saved view. */
function renderNotifications(): void {
  const id = openSaved?.id ?? null;
  if (id === notifiedView) return;
  notifiedView = id;
  const view = openSaved;
  void notifications.show(view === null ? null : {
    path: `${viewsPath(listedOrganization())}/${encodeURIComponent(view.id)}`, name: view.attributes.name, catalogView: catalog.view(view.attributes['query-type'])!,
  });
}

function renderSaved(focusSelector?: string): void {
  renderNotifications();
  const views = saved?.views ?? [];
  el.savedEmpty.hidden = views.length > 0;
  el.savedEmpty.textContent = saved ? `No saved views in ${saved.organization} yet.`
    : acrossOrganizations() ? 'Saved views belong to one organization: choose one to see its saved views.' : 'Run a query to see the organization\'s saved views.';
  el.savedList.replaceChildren(...views.map((v) => savedItem(v)));
  if (focusSelector) focus(el.savedList.querySelector<HTMLElement>(focusSelector));
}

function savedItem(v: Q.SavedViewResource): HTMLLIElement {
  const name = v.attributes.name;
  const current = openSaved?.id === v.id;
  const li = h('li', { 'data-id': v.id, class: current ? 'current' : null, 'aria-current': current ? 'true' : null });
  if (editing?.id === v.id && editing.mode === 'rename') {
    const input = h('input', { type: 'text', value: name, maxlength: 255, 'aria-label': `New name for “${name}”`, autocomplete: 'off' });
    const form = h('form', { class: 'rename', novalidate: true },
      input,
      h('button', { type: 'submit' }, 'Save name'),
      h('button', { type: 'button', onclick: () => { editing = null; renderSaved(`li[data-id="${v.id}"] .rename-button`); } }, 'Cancel'));
    form.addEventListener('submit', (ev) => { ev.preventDefault(); void renameSaved(v, input.value); });
    input.addEventListener('keydown', (ev) => {
      if (ev.key === 'Escape') { editing = null; renderSaved(`li[data-id="${v.id}"] .rename-button`); }
    });
    li.append(form);
    return li;
  }
  li.append(
    h('span', { class: 'saved-name' }, name),
    h('span', { class: 'badge' }, v.attributes['query-type']),
    h('span', { class: 'inline' },
      h('button', { type: 'button', class: 'small open-button', 'aria-label': `Open “${name}”`, onclick: () => { void openSavedView(v.id); } }, 'Open'),
      h('button', { type: 'button', class: 'small rename-button', 'aria-label': `Rename “${name}”`, onclick: () => { editing = { id: v.id, mode: 'rename' }; renderSaved(`li[data-id="${v.id}"] .rename input`); } }, 'Rename'),
      h('button', { type: 'button', class: 'small delete-button', 'aria-label': `Delete “${name}”`, onclick: () => { editing = { id: v.id, mode: 'delete' }; renderSaved(`li[data-id="${v.id}"] .confirm-delete`); } }, 'Delete')),
  );
  if (editing?.id === v.id && editing.mode === 'delete') {
    li.append(h('p', { class: 'confirm', role: 'group', 'aria-label': `Delete “${name}”?` },
      `Delete “${name}” for everyone in ${organization()}? `,
      h('button', { type: 'button', class: 'small danger confirm-delete', onclick: () => { void deleteSaved(v); } }, 'Yes, delete'),
      h('button', { type: 'button', class: 'small', onclick: () => { editing = null; renderSaved(`li[data-id="${v.id}"] .delete-button`); } }, 'Cancel')));
  }
  return li;
}

/** Opens a saved view by its id, as it is saved now (a link with `view=`, or its Open button). */
async function openSavedView(id: string, push = true): Promise<void> {
  if (!ready()) return;
  try {
    const org = listedOrganization();
    const { body } = await api.json<{ data: Q.SavedViewResource }>(`${viewsPath(org)}/${encodeURIComponent(id)}`);
    el.org.value = org;
    openSaved = body.data;
    editing = null;
    query = { ...Q.queryOfSaved(catalog, body.data, query.size), snapshot: query.snapshot };
    el.saveName.value = '';
    renderQueryControls();
    renderSaved();
    await runQuery({ push, action: 'open' });
  } catch (e) {
    explain(e, 'open');
  }
}

async function saveNew(): Promise<void> {
  if (!ready()) return;
  if (acrossOrganizations()) {
    showError('Saved views belong to one organization', 'Choose an organization to save this query in, or keep its link (Copy link).', el.org);
    return;
  }
  const name = el.saveName.value.trim();
  if (name === '') {
    showError('No name', 'Give the saved view a name.', el.saveName);
    return;
  }
  try {
    const { body } = await api.json<{ data: Q.SavedViewResource }>(viewsPath(), {
      method: 'POST',
      body: { data: { name, query_type: query.type, query: Q.storedQueryOf(catalog, query) } },
    });
    openSaved = body.data;
    el.saveName.value = '';
    await loadSaved();
    say(`Saved “${body.data.attributes.name}”.`);
    focus(el.savedList.querySelector<HTMLElement>(`li[data-id="${body.data.id}"] .open-button`));
  } catch (e) {
    explain(e, 'save');
  }
}

async function updateOpen(): Promise<void> {
  if (!ready() || !openSaved) return;
  const v = openSaved;
  try {
    const { body } = await api.json<{ data: Q.SavedViewResource }>(`${viewsPath()}/${encodeURIComponent(v.id)}`, {
      method: 'PATCH',
      body: { data: { name: v.attributes.name, query: Q.storedQueryOf(catalog, query) } },
    });
    openSaved = body.data;
    await loadSaved();
    say(`Updated “${body.data.attributes.name}”.`);
  } catch (e) {
    explain(e, 'update');
  }
}

async function renameSaved(v: Q.SavedViewResource, newName: string): Promise<void> {
  if (!ready()) return;
  try {
    // Update replaces name and query whole (§4.3): send the stored query back unchanged.
    const { body } = await api.json<{ data: Q.SavedViewResource }>(`${viewsPath(listedOrganization())}/${encodeURIComponent(v.id)}`, {
      method: 'PATCH',
      body: { data: { name: newName.trim(), query: v.attributes.query } },
    });
    editing = null;
    if (openSaved?.id === v.id) openSaved = body.data;
    await loadSaved();
    renderSaved(`li[data-id="${v.id}"] .rename-button`);
    renderSaveControls();
    say(`Renamed “${v.attributes.name}” to “${body.data.attributes.name}”.`);
  } catch (e) {
    explain(e, 'rename');
  }
}

async function deleteSaved(v: Q.SavedViewResource): Promise<void> {
  if (!ready()) return;
  try {
    await api.request(`${viewsPath(listedOrganization())}/${encodeURIComponent(v.id)}`, { method: 'DELETE' });
    editing = null;
    if (openSaved?.id === v.id) openSaved = null;
    await loadSaved();
    say(`Deleted “${v.attributes.name}”.`);
    focus(el.savedList.querySelector<HTMLElement>('.open-button') ?? el.saveName);
  } catch (e) {
    explain(e, 'delete');
  }
}

// ---------- wiring ----------

/** Shows what a link holds; returns the saved view it names, which the caller opens once the page can ask for it. */
function applyLink(text: string): string | null {
  // The link's organization first: across organizations its fields are read as the cross-organization views'.
  const org = Q.decodePairs(text).find(([k]) => k === 'org')?.[1];
  if (org !== undefined) el.org.value = org;
  catalog.across = acrossOrganizations();
  const parsed = Q.parseLink(catalog, text);
  query = parsed.query;
  openSaved = null;
  renderQueryControls();
  renderSaved();
  if (parsed.dropped.length > 0) say(`This link held what this page does not know and left out: ${parsed.dropped.join('; ')}.`);
  return parsed.savedView;
}

function wire(): void {
  el.form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    query.page = 1;
    void runQuery({ push: true });
  });
  el.token.addEventListener('input', () => {
    el.token.removeAttribute('aria-invalid');
    if (tokenValue() === '') sessionStorage.removeItem(TOKEN_KEY);
    else sessionStorage.setItem(TOKEN_KEY, tokenValue());
  });
  // Another token may see other views: the list is fetched again after the next query. Not redrawn now:
  // this fires as the focus leaves the field, and a list collapsing under the pointer moves what was clicked.
  el.token.addEventListener('change', () => { savedStale = true; });
  // The picker's choices are asked for when it is about to be used, once per token: no request otherwise.
  el.org.addEventListener('focus', () => {
    if (tokenValue() === '' || offeredFor === tokenValue()) return;
    offeredFor = tokenValue();
    void offerOrganizations();
  });
  el.tokenShow.addEventListener('click', () => {
    const show = el.token.type === 'password';
    el.token.type = show ? 'text' : 'password';
    el.tokenShow.setAttribute('aria-pressed', String(show));
    el.tokenShow.textContent = show ? 'Hide' : 'Show';
  });
  el.tokenForget.addEventListener('click', () => {
    el.token.value = '';
    sessionStorage.removeItem(TOKEN_KEY);
    saved = null;
    renderSaved();
    say('The token is forgotten.');
    focus(el.token);
  });
  el.org.addEventListener('change', () => {
    el.org.removeAttribute('aria-invalid');
    followPicker();
    openSaved = null;
    renderSaveControls(); // the list itself follows after the next query (see the token above)
  });
  el.view.addEventListener('change', () => {
    query = { ...Q.emptyQuery(catalog, el.view.value, query.size), snapshot: query.snapshot };
    openSaved = null;
    renderQueryControls();
    renderSaved();
    if (tokenValue() !== '' && organization() !== '') void runQuery({ push: true });
  });
  el.addFilter.addEventListener('click', () => {
    query.filters.push(Q.newFilter(catalog, viewOf(query)));
    renderFilters(`filter-${query.filters.length - 1}-field`);
  });
  el.fieldsAll.addEventListener('click', () => {
    for (const b of el.fields.querySelectorAll<HTMLInputElement>('input[type=checkbox]')) b.checked = true;
    query.fields = null;
    updateFieldsCount();
  });
  el.fieldsNone.addEventListener('click', () => {
    for (const b of el.fields.querySelectorAll<HTMLInputElement>('input[type=checkbox]')) b.checked = false;
    query.fields = [];
    updateFieldsCount();
  });
  el.pageSize.addEventListener('change', () => {
    const n = Number(el.pageSize.value);
    if (!Number.isInteger(n) || n < 1) {
      showError('Rows per page', `Rows per page must be a whole number from 1 to ${catalog.data.page.maxSize}.`, el.pageSize);
      return;
    }
    query.size = Math.min(n, catalog.data.page.maxSize);
    query.page = 1;
    el.pageSize.value = String(query.size);
    void runQuery({ push: true });
  });
  el.first.addEventListener('click', () => goToPage('first'));
  el.prev.addEventListener('click', () => goToPage('prev'));
  el.next.addEventListener('click', () => goToPage('next'));
  el.last.addEventListener('click', () => goToPage('last'));
  el.download.addEventListener('click', () => { void downloadCsv(); });
  History.initHistory({
    api, catalog, clearError, organization,
    explain: (e) => explain(e, 'query'),
    download: downloadCsv,
    // The snapshot picker: the same query, first page, in another snapshot (and in the link).
    travel: (snapshot) => { query.snapshot = snapshot; query.page = 1; void runQuery({ push: true }); },
    drill: (filters) => { query.filters.push(...filters); query.page = 1; renderFilters(); void runQuery({ push: true }); },
  });
  el.copyLink.addEventListener('click', async () => {
    writeUrl(false);
    try {
      await navigator.clipboard.writeText(location.href);
      say('Link copied. It holds the query, not your token.');
    } catch {
      say(`Copy this link (it holds the query, not your token): ${location.href}`);
    }
  });
  el.saveForm.addEventListener('submit', (ev) => { ev.preventDefault(); void saveNew(); });
  el.saveUpdate.addEventListener('click', () => { void updateOpen(); });
  document.querySelector('.skip')?.addEventListener('click', (ev) => { ev.preventDefault(); focus(el.resultsHeading); });
  const onNavigate = () => {
    if (location.hash === lastHash) return;
    lastHash = location.hash;
    const saved = applyLink(location.hash);
    if (tokenValue() !== '' && organization() !== '') void (saved !== null ? openSavedView(saved, false) : runQuery({ push: false }));
  };
  window.addEventListener('popstate', onNavigate);
  window.addEventListener('hashchange', onNavigate);
}

async function start(): Promise<void> {
  try {
    catalog = new Catalog(await loadCatalog());
  } catch (e) {
    showError('The page could not start', `Its field catalog did not load: ${(e as Error).message}.`);
    return;
  }
  api = new Api(new URL('../api/v2/', import.meta.url), tokenValue);
  notifications = notificationsPanel(byId('notifications'), api, (e) => explain(e, 'notify'), say);
  renderViewSelect();
  el.token.value = sessionStorage.getItem(TOKEN_KEY) ?? '';
  el.org.value = localStorage.getItem(ORG_KEY) ?? '';
  catalog.across = acrossOrganizations();
  query = Q.emptyQuery(catalog);
  lastHash = location.hash;
  const saved = location.hash.length > 1 ? applyLink(location.hash) : null;
  if (location.hash.length <= 1) renderQueryControls();
  renderPager();
  renderSaved();
  wire();
  document.documentElement.dataset.ready = 'true';
  if (tokenValue() !== '' && organization() !== '') {
    await (saved !== null ? openSavedView(saved, false) : runQuery({ push: false }));
  } else {
    say(tokenValue() === '' ? 'Paste an API token to start.' : 'Enter the organization, then run the query.');
    focus(tokenValue() === '' ? el.token : el.org);
  }
}

void start();
