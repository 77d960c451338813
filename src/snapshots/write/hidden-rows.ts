// The figures a manifest keeps of the rows of an organization's lowest layer that the layers over it replace
// (delta-layout.ts HiddenRows), read from a list of their positions: the batch that touches the organization
// writes that list into its delta (delta.ts findHidden), a compaction into the whole layer for the
// organizations it holds as runs over the base (whole-layer.ts).
import { HIDDEN_RANGES, type HiddenRows } from '../delta-layout.js';
import type { DuckDBValue } from '@duckdb/node-api';

/**
 * Adds to each organization's figures (by key, as `byKey` holds them, with `rows[view]` and `ranges[view]` set to
 * none) how many positions `list` (a table of `_org_key`, `pos`) holds for it, and their runs of consecutive
 * positions while there are at most `most` of them. `keyList`: the keys, written out as constants.
 */
export async function countHidden(all: (sql: string) => Promise<DuckDBValue[][]>, list: string, view: string, byKey: ReadonlyMap<number, HiddenRows>, keyList: string, most = HIDDEN_RANGES): Promise<void> {
  // Runs of consecutive positions: a position less its rank is the same along a run.
  for (const [k, first, last, n] of await all(`SELECT _org_key, min(pos), max(pos), count(*) FROM (
      SELECT _org_key, pos, pos - row_number() OVER (PARTITION BY _org_key ORDER BY pos) AS run FROM ${list} WHERE _org_key IN (${keyList}))
    GROUP BY _org_key, run ORDER BY _org_key, min(pos)`)) {
    const h = byKey.get(Number(k))!;
    h.rows[view] = (h.rows[view] ?? 0) + Number(n);
    if (h.ranges) h.ranges[view]!.push([Number(first), Number(last)]);
    if (h.ranges && h.ranges[view]!.length > most) h.ranges = null;
  }
}
