// A few lines of DOM building: elements with attributes, listeners and children. Text is always set as
// text (never HTML), so values from the API cannot inject markup.
type Child = Node | string | null | undefined | false;
type AttrValue = string | number | boolean | null | undefined | ((event: Event) => void);

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, AttrValue> = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === 'function') el.addEventListener(key.replace(/^on/, ''), value);
    else if (key === 'class') el.className = String(value);
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children) if (child !== null && child !== undefined && child !== false) el.append(child);
  return el;
}

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`the page has no #${id}`);
  return el as T;
}

/** Focuses an element and brings it into view (keyboard users follow the focus). */
export function focus(el: HTMLElement | null | undefined): void {
  if (!el) return;
  el.focus({ preventScroll: false });
}

export const formatCount = (n: number) => n.toLocaleString('en-US');

/** The pagination meta of a JSON:API page (docs/interface.md). */
export interface PageMeta { 'prev-page': number | null; 'next-page': number | null; 'total-pages': number }

/**
 * Wires a pager's first, previous, next and last buttons: each asks `go` for the page it names in the
 * pagination on screen (`current()`, null while none is shown).
 */
export function wirePager(buttons: { first: HTMLButtonElement; prev: HTMLButtonElement; next: HTMLButtonElement; last: HTMLButtonElement },
  current: () => PageMeta | null | undefined, go: (page: number) => void): void {
  const to = (which: keyof typeof buttons) => {
    const p = current();
    if (!p) return;
    const target = which === 'first' ? 1 : which === 'prev' ? p['prev-page'] : which === 'next' ? p['next-page'] : p['total-pages'];
    if (target !== null && target >= 1) go(target);
  };
  for (const which of ['first', 'prev', 'next', 'last'] as const) buttons[which].addEventListener('click', () => to(which));
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}
