// A notification configuration checked between two snapshots (docs/notifications.md, "Triggers"): which of
// its triggers fired, with the counts or the measure and the first rows of each. The saved query is compiled
// by the same compiler as its pages (compile-history.ts), and run in this process's own DuckDB over the two
// snapshots' files, attached read-only.
import type { DuckDBConnection, DuckDBValue } from '@duckdb/node-api';
import { compileNotificationCheck, type Measure } from '../query/compile-history.js';
import { sourceOfStored, validateSavedQuery } from '../saved-views/saved-query.js';
import { attachments, type Snapshot } from '../snapshots/read/current-snapshot.js';
import type { NotificationConfiguration, NotificationThreshold, NotificationTrigger, SavedView } from '../store/state-store.js';

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
    await db.run(`ATTACH '${a.path.replace(/'/g, "''")}' AS "${a.alias}" (READ_ONLY)`);
    attached.add(a.alias);
  }
}

/**
 * The triggers of `configuration` that fired between `from` and `to` (both attached to `db`), for its saved
 * `view`. A threshold fires when its measure moves from not beyond the line to beyond it.
 */
export async function checkPair(db: DuckDBConnection, engine: string, from: Snapshot, to: Snapshot, view: SavedView,
  configuration: NotificationConfiguration): Promise<FiredTrigger[]> {
  const query = validateSavedQuery(engine, view.queryType, sourceOfStored(view.query));
  const threshold = configuration.threshold;
  const summed = threshold?.measure.startsWith('sum:') ? query.view.fields.find((f) => f.name === threshold.measure.slice(4)) : undefined;
  const measure: Measure = summed ? { kind: 'sum', field: summed } : { kind: 'count' };
  const org = view.organization;
  const compiled = compileNotificationCheck(query, from.target(view.queryType, org), to.target(view.queryType, org), measure, ROWS_PER_TRIGGER);
  const [row] = (await db.runAndReadAll(compiled.counts.sql, compiled.counts.params as DuckDBValue[])).getRows();
  const counts: Counts = { added: Number(row![0]), removed: Number(row![1]), changed: Number(row![2]) };
  const [before, after] = [number(row![3]), number(row![4])];

  const fired: FiredTrigger[] = [];
  const rowTriggers = configuration.triggers.filter((t) => KIND[t] !== undefined && counts[KIND[t]!] > 0);
  if (rowTriggers.length > 0) {
    const rows = (await db.runAndReadAll(compiled.rows.sql, compiled.rows.params as DuckDBValue[])).getRows();
    for (const trigger of rowTriggers) {
      const kind = KIND[trigger]!;
      fired.push({
        trigger,
        counts,
        rows: rows.filter((r) => r[0] === kind).map(([change, id, ...values]) => ({
          id, change, ...Object.fromEntries(compiled.identifying.map((f, i) => [f.name, values[i] === null ? null : JSON.parse(String(values[i]))])),
        })),
      });
    }
  }
  if (threshold && configuration.triggers.includes('explorer:threshold') && !beyond(threshold, before) && beyond(threshold, after)) {
    fired.push({ trigger: 'explorer:threshold', measure: { name: threshold.measure, before, after, threshold }, rows: [] });
  }
  return fired;
}
