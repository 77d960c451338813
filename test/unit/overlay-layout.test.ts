// The overlays' part of the layout contract, without a database: which overlays a batch merges, and the
// statements that read the layers under the deltas as one.
import { expect } from 'chai';
import { VIEW_NAMES } from '../../src/catalog/catalog.js';
import { underStatements } from '../../src/snapshots/delta-layout.js';
import type { Manifest } from '../../src/snapshots/snapshot-dir.js';
import { overlaysToMerge } from '../../src/snapshots/write/apply.js';

const manifest = (overlays: Record<string, number>[], rows: Record<string, number>): Manifest => ({
  id: 's', createdAt: '2026-11-28T00:00:00.000Z', source: 'x', counts: {}, files: {}, rows: {},
  organizationRows: { workspaces: rows, resources: Object.fromEntries(Object.entries(rows).map(([o, n]) => [o, n * 10])) },
  overlays: overlays.map((organizations, i) => ({ file: `overlay-${i}.duckdb`, id: `s${i}`, organizations })),
});

describe('overlays: which a batch takes in', () => {
  it('takes none while fewer than the most a snapshot keeps', () => {
    expect(overlaysToMerge(manifest([{ a: 1 }, { b: 2 }], { a: 1, b: 1 }), 3)).to.deep.equal([]);
  });

  it('takes the smaller half by rows, whatever their age', () => {
    const m = manifest([{ big: 1 }, { a: 2 }, { huge: 3, b: 4 }, { c: 5 }], { big: 500, a: 3, huge: 9000, b: 1, c: 7 });
    expect(overlaysToMerge(m, 4).map((o) => o.file)).to.deep.equal(['overlay-1.duckdb', 'overlay-3.duckdb']);
    expect(overlaysToMerge(m, 5)).to.deep.equal([]);
  });
});

describe('overlays: the layers under the deltas read as one', () => {
  it('with no overlay, tests nothing (NOT IN an empty list would keep no row)', () => {
    const sql = underStatements('u', ['f_base', 'f_whole'], []).join('\n');
    expect(sql).to.not.include('_org_key NOT IN');
    expect(sql).to.not.include('organization NOT IN');
    expect(sql).to.include('ANTI JOIN');
  });

  it('reads each overlay\'s organizations from it alone, by key for views and by name for the source state', () => {
    const statements = underStatements('u', ['f_base'], [{ alias: 'f_overlay0', organizations: { 'a-org': 7 } }, { alias: 'f_overlay1', organizations: { "o'brien": 9 } }]);
    const view = statements.find((s) => s.startsWith('CREATE VIEW u."workspaces"'))!;
    expect(view).to.include('t._org_key NOT IN (7, 9)');
    expect(view).to.include('f_overlay0."workspaces" WHERE _org_key IN (7)');
    expect(view).to.include('f_overlay1."workspaces" WHERE _org_key IN (9)');
    const state = statements.find((s) => s.startsWith('CREATE VIEW u.source_workspaces'))!;
    expect(state).to.include("s.organization NOT IN ('a-org', 'o''brien')");
    expect(state).to.include("f_overlay1.source_workspaces WHERE organization IN ('o''brien')");
    // The small kinds are whole in the newest layer below: no overlay holds them.
    expect(statements.find((s) => s.startsWith('CREATE VIEW u.source_organizations'))).to.not.include('overlay');
    expect(statements.filter((s) => s.startsWith('CREATE VIEW u."'))).to.have.length(VIEW_NAMES.length);
  });
});
