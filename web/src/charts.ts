// Charts as inline SVG built with DOM calls: the page's CSP allows no chart library, no inline script and
// no style attributes, so geometry goes in SVG presentation attributes (x, y, d, points…) and every colour
// in styles.css. Each chart is an image with a one-sentence summary for screen readers; the numbers
// themselves go in a real table next to it (valuesTable), which is what assistive technology reads.
import { formatCount, h } from './dom.js';

const SVG = 'http://www.w3.org/2000/svg';
type SvgChild = SVGElement | string | null | undefined | false;

function s<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number | null | undefined> = {}, ...children: SvgChild[]): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) if (value !== null && value !== undefined) el.setAttribute(key, String(value));
  for (const child of children) if (child !== null && child !== undefined && child !== false) el.append(child);
  return el;
}

/** Rounded for coordinates: shorter attributes, and the same picture on every run. */
const r1 = (n: number) => Math.round(n * 10) / 10;

/** A round upper bound (1, 2 or 5 times a power of ten per step) and its tick step, for an axis from 0. */
export function niceScale(max: number, ticks = 4): { max: number; step: number } {
  if (!(max > 0)) return { max: 1, step: 1 };
  const raw = max / ticks;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((m) => m >= raw)!;
  // Counts are whole numbers: a step below 1 would label the axis 0.5, 1.5…
  const whole = Number.isInteger(max) ? Math.max(1, step) : step;
  return { max: Math.ceil(max / whole) * whole, step: whole };
}

const formatValue = (n: number) => (Number.isInteger(n) ? formatCount(n) : n.toLocaleString('en-US', { maximumFractionDigits: 2 }));

export interface TrendPoint {
  /** What the point is called on the axis and in its tooltip (a snapshot's label or date). */
  label: string;
  /** null: nothing to count (a sum over no rows); the line has a gap there. */
  value: number | null;
  /** The snapshot on screen, drawn larger. */
  current?: boolean;
}

const LINE = { width: 640, height: 200, left: 52, right: 20, top: 14, bottom: 34 };

/**
 * A line over snapshots, oldest to newest: one marker (class `point`) per point with a value, a gap in the
 * line where a value is null. `name` says what is counted, for the summary.
 */
export function trendChart(points: TrendPoint[], name: string): SVGSVGElement {
  const { width, height, left, right, top, bottom } = LINE;
  const values = points.map((p) => p.value).filter((v): v is number => v !== null);
  const { max, step } = niceScale(Math.max(0, ...values));
  const plotW = width - left - right;
  const plotH = height - top - bottom;
  const x = (i: number) => r1(points.length === 1 ? left + plotW / 2 : left + (plotW * i) / (points.length - 1));
  const y = (v: number) => r1(top + plotH - (plotH * v) / max);

  const grid = s('g', { class: 'grid', 'aria-hidden': 'true' });
  for (let k = 0; k * step <= max + step / 2; k++) {
    const v = k * step;
    grid.append(
      s('line', { x1: left, x2: width - right, y1: y(v), y2: y(v) }),
      s('text', { x: left - 10, y: y(v) + 4, 'text-anchor': 'end' }, formatValue(v)));
  }
  // At most about eight axis labels, always the first and the last: the tooltips and the table name all.
  const every = Math.max(1, Math.ceil(points.length / 8));
  const axis = s('g', { class: 'axis', 'aria-hidden': 'true' });
  points.forEach((p, i) => {
    const last = points.length - 1;
    // The last one always; a regular one only when it leaves room before the last.
    if (i !== last && (i % every !== 0 || last - i < every)) return;
    const anchor = points.length === 1 ? 'middle' : i === 0 ? 'start' : i === points.length - 1 ? 'end' : 'middle';
    axis.append(s('text', { x: x(i), y: height - bottom + 18, 'text-anchor': anchor }, p.label));
  });

  let d = '';
  let pen = false;
  points.forEach((p, i) => {
    if (p.value === null) { pen = false; return; }
    d += `${pen ? 'L' : 'M'}${x(i)} ${y(p.value)}`;
    pen = true;
  });
  const markers = s('g', { class: 'points' });
  points.forEach((p, i) => {
    if (p.value === null) return;
    markers.append(s('circle', { class: p.current ? 'point current' : 'point', cx: x(i), cy: y(p.value), r: p.current ? 5.5 : 4 },
      s('title', {}, `${p.label}: ${formatValue(p.value)}${p.current ? ' (shown)' : ''}`)));
  });
  return s('svg', {
    class: 'chart trend', role: 'img', viewBox: `0 0 ${width} ${height}`, width, height,
    'aria-label': trendSummary(points, name),
  }, grid, s('line', { class: 'baseline', x1: left, x2: width - right, y1: y(0), y2: y(0) }), axis,
  d === '' ? null : s('path', { class: 'line', d }), markers);
}

/** One sentence: how many snapshots, first and last value, lowest and highest. */
export function trendSummary(points: TrendPoint[], name: string): string {
  const known = points.filter((p): p is TrendPoint & { value: number } => p.value !== null);
  if (points.length === 0) return `${name}: no snapshots.`;
  if (known.length === 0) return `${name} over ${points.length} snapshot${points.length === 1 ? '' : 's'}: no values.`;
  const first = known[0]!;
  const last = known[known.length - 1]!;
  const values = known.map((p) => p.value);
  if (points.length === 1) return `${name} in 1 snapshot (${first.label}): ${formatValue(first.value)}.`;
  return `${name} over ${points.length} snapshots, from ${formatValue(first.value)} (${first.label}) to ${formatValue(last.value)} (${last.label}); `
    + `lowest ${formatValue(Math.min(...values))}, highest ${formatValue(Math.max(...values))}.`;
}

export interface Bar { label: string; value: number }

const BAR = { width: 640, row: 22, label: 210, gap: 4, valueRoom: 56, top: 6 };
/** Longer labels are cut on the chart; the tooltip and the table have them whole. */
const MAX_LABEL = 30;

/** Horizontal bars (class `bar`), one per item in the order given, labelled on the left, value at the end. */
export function barChart(bars: Bar[], name: string): SVGSVGElement {
  const { width, row, label, gap, valueRoom, top } = BAR;
  const height = top * 2 + row * bars.length;
  const { max } = niceScale(Math.max(0, ...bars.map((b) => b.value)));
  const room = width - label - valueRoom;
  const items = bars.map((b, i) => {
    const y = top + i * row;
    const w = r1((room * Math.max(0, b.value)) / max);
    const text = b.label.length > MAX_LABEL ? `${b.label.slice(0, MAX_LABEL - 1)}…` : b.label;
    return s('g', { class: 'bar-row' },
      s('title', {}, `${b.label}: ${formatValue(b.value)}`),
      s('text', { class: 'bar-label', x: label - 8, y: y + row / 2 + 4, 'text-anchor': 'end' }, text),
      s('rect', { class: 'bar', x: label, y: y + gap / 2, width: Math.max(w, b.value > 0 ? 1 : 0), height: row - gap }),
      s('text', { class: 'bar-value', x: r1(label + w + 6), y: y + row / 2 + 4 }, formatValue(b.value)));
  });
  const top3 = [...bars].sort((a, b) => b.value - a.value).slice(0, 3).map((b) => `${b.label} (${formatValue(b.value)})`);
  return s('svg', {
    class: 'chart bars', role: 'img', viewBox: `0 0 ${width} ${height}`, width, height,
    'aria-label': bars.length === 0 ? `${name}: no rows.` : `${name}, ${bars.length} bar${bars.length === 1 ? '' : 's'}; largest ${top3.join(', ')}.`,
  }, s('line', { class: 'baseline', x1: label, x2: label, y1: top, y2: height - top }), ...items);
}

/** The numbers behind a chart as a table: `rows` hold display text, null for no value. */
export function valuesTable(caption: string, columns: string[], rows: (string | number | null)[][], numeric: boolean[]): HTMLTableElement {
  const cell = (v: string | number | null, i: number, tag: 'th' | 'td') => {
    const c = h(tag, { class: numeric[i] ? 'num' : null, scope: tag === 'th' ? 'row' : null });
    if (v === null) c.append(h('span', { class: 'null' }, h('span', { 'aria-hidden': 'true' }, '—'), h('span', { class: 'sr-only' }, 'empty')));
    else c.append(typeof v === 'number' ? formatValue(v) : v);
    return c;
  };
  return h('table', { class: 'values' },
    h('caption', {}, caption),
    h('thead', {}, h('tr', {}, ...columns.map((c, i) => h('th', { scope: 'col', class: numeric[i] ? 'num' : null }, c)))),
    h('tbody', {}, ...rows.map((r) => h('tr', {}, ...r.map((v, i) => cell(v, i, i === 0 ? 'th' : 'td'))))));
}
