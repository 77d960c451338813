// A notification configuration checked between two snapshots (docs/notifications.md, "Triggers"): which of
// its triggers fired, with the counts or the measure and the first rows of each. The saved query is compiled
// by the same compiler as its pages (compile-history.ts), and run in this process's own DuckDB over the two
// snapshots' files, attached read-only.
import type { DuckDBConnection, DuckDBValue } from '@duckdb/node-api';
import { compileNotificationCheck, type Measure } from '../query/compile-history.js';
import { sourceOfStored, validateSavedQuery } from '../saved-views/saved-query.js';
import { attachments, type Snapshot } from '../snapshots/read/current-snapshot.js';
import type { NotificationConfiguration, NotificationThreshold, NotificationTrigger, SavedView } from '../store/state-store.js';
import { sqlLiteral } from '../duckdb/sql.js';

/** Rows a notification lists per trigger. */
export const ROWS_PER_TRIGGER = 20;

export interface Counts { added: number; removed: number; changed: number }

export interface FiredTrigger {
  trigger: NotificationTrigger;
  /** A row trigger's counts of every kind. */
  counts?: Counts;
  /** A threshold's measure at both snapshots (null before when there is no older snapshot). */
  measure?: { name: string; before: number | null; after: number | null; threshold: NotificationThreshold };
  /** The first rows of the trigger's kind, in the saved query's order: id, change, identifying fields. */
  rows: Record<string, unknown>[];
}

const KIND: Partial<Record<NotificationTrigger, keyof Counts>> = {
  'explorer:rows-added': 'added', 'explorer:rows-removed': 'removed', 'explorer:rows-changed': 'changed',
};

const number = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

/** Whether `value` is past the threshold's line (null is neither above nor below anything). */
export function beyond(threshold: NotificationThreshold, value: number | null): boolean {
  if (value === null) return false;
  return threshold.above !== undefined ? value > threshold.above : value < threshold.below!;
}

/** Attaches the snapshots' files to `db` (once per alias) for the checks that read them. */
export async function attachSnapshots(db: DuckDBConnection, attached: Set<string>, ...snapshots: Snapshot[]): Promise<void> {
  for (const a of attachments(...snapshots)) {
    if (attached.has(a.alias)) continue;
    await db.run(`ATTACH ${sqlLiteral(a.path)} AS "${a.alias}" (READ_ONLY)`);
    attached.add(a.alias);
  }
}

/**
 * The triggers that fired between `from` and `to` (both attached to `db`) for each of `configurations`, all of
 * one saved `view`: the view's query is run once for all of them (its counts with every threshold's measure,
 * then its rows if a row trigger fired), not once per configuration. A threshold fires when its measure
 * moves from not beyond the line to beyond it. The result is in the configurations' order.
 */
export async function checkView(db: DuckDBConnection, engine: string, from: Snapshot, to: Snapshot, view: SavedView,
  configurations: readonly NotificationConfiguration[]): Promise<FiredTrigger[][]> {
  const query = validateSavedQuery(engine, view.queryType, sourceOfStored(view.query));
  const names = [...new Set(configurations.flatMap((c) => (c.threshold && c.triggers.includes('explorer:threshold') ? [c.threshold.measure] : [])))];
  const measures: Measure[] = names.map((name) => {
    const field = name.startsWith('sum:') ? query.view.fields.find((f) => f.name === name.slice(4)) : undefined;
    return field ? { kind: 'sum', field } : { kind: 'count' };
  });
  const org = view.organization;
  const compiled = compileNotificationCheck(query, from.target(view.queryType, org), to.target(view.queryType, org), measures, ROWS_PER_TRIGGER);
  const [row] = (await db.runAndReadAll(compiled.counts.sql, compiled.counts.params as DuckDBValue[])).getRows();
  const counts: Counts = { added: Number(row![0]), removed: Number(row![1]), changed: Number(row![2]) };
  const measured = new Map(names.map((name, i) => [name, [number(row![3 + 2 * i]), number(row![4 + 2 * i])] as const]));

  const wanted = (c: NotificationConfiguration) => c.triggers.filter((t) => KIND[t] !== undefined && counts[KIND[t]!] > 0);
  const rows = configurations.some((c) => wanted(c).length > 0)
    ? (await db.runAndReadAll(compiled.rows.sql, compiled.rows.params as DuckDBValue[])).getRows() : [];
  const listed = (kind: keyof Counts) => rows.filter((r) => r[0] === kind).map(([change, id, ...values]) => ({
    id, change, ...Object.fromEntries(compiled.identifying.map((f, i) => [f.name, values[i] === null ? null : JSON.parse(String(values[i]))])),
  }));
  return configurations.map((c) => {
    const fired: FiredTrigger[] = wanted(c).map((trigger) => ({ trigger, counts, rows: listed(KIND[trigger]!) }));
    const threshold = c.threshold;
    if (threshold && c.triggers.includes('explorer:threshold')) {
      const [before, after] = measured.get(threshold.measure)!;
      if (!beyond(threshold, before) && beyond(threshold, after)) fired.push({ trigger: 'explorer:threshold', measure: { name: threshold.measure, before, after, threshold }, rows: [] });
    }
    return fired;
  });
}

/** One configuration's fired triggers (checkView of it alone). */
export async function checkPair(db: DuckDBConnection, engine: string, from: Snapshot, to: Snapshot, view: SavedView,
  configuration: NotificationConfiguration): Promise<FiredTrigger[]> {
  return (await checkView(db, engine, from, to, view, [configuration]))[0]!;
}
