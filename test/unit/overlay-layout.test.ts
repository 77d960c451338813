// The overlays' part of the layout contract, without a database: which overlays a batch merges, and the
// statements that read the layers under the deltas as one.
import { expect } from 'chai';
import { VIEW_NAMES } from '../../src/catalog/catalog.js';
import { organizationLayers, partRows, standingRuns, underStatements } from '../../src/snapshots/delta-layout.js';
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
  it('with no overlay, leaves nothing out of the lower part', () => {
    const sql = underStatements('u', ['f_base', 'f_whole'], []).join('\n');
    expect(sql).to.not.include('unnest');
    // The whole layer's replaced workspaces still leave the base's rows out.
    expect(sql).to.include('ANTI JOIN (SELECT id FROM f_whole.replaced_workspaces)');
  });

  it('reads each overlay\'s organizations from it alone, by key for views and by name for the source state', () => {
    const statements = underStatements('u', ['f_base'], [{ alias: 'f_overlay0', organizations: { 'a-org': 7 } }, { alias: 'f_overlay1', organizations: { "o'brien": 9 } }]);
    const view = statements.find((s) => s.startsWith('CREATE VIEW u."workspaces"'))!;
    // An anti join on the list rather than a filter on the scan: a lookup by workspace id still reaches the scan.
    expect(view).to.include('ANTI JOIN (SELECT unnest([7, 9]) AS v) x ON x.v = t._org_key');
    expect(view).to.not.include('NOT IN');
    expect(view).to.include('f_overlay0."workspaces" WHERE _org_key IN (7)');
    expect(view).to.include('f_overlay1."workspaces" WHERE _org_key IN (9)');
    const state = statements.find((s) => s.startsWith('CREATE VIEW u.source_workspaces'))!;
    expect(state).to.include("ANTI JOIN (SELECT unnest(['a-org', 'o''brien']) AS v) x ON x.v = t.organization");
    expect(state).to.include("f_overlay1.source_workspaces WHERE organization IN ('o''brien')");
    // The small kinds are whole in the newest layer below: no overlay holds them.
    expect(statements.find((s) => s.startsWith('CREATE VIEW u.source_organizations'))).to.not.include('overlay');
    expect(statements.filter((s) => s.startsWith('CREATE VIEW u."'))).to.have.length(VIEW_NAMES.length);
  });
});

describe('overlays: a batch reads each organization from its own part of the layers under the deltas', () => {
  it('reads an organization an overlay holds from that overlay alone', () => {
    expect(partRows(['f_base', 'f_whole'], 'f_overlay1', '"workspaces"', 'external_id', '_org, _pos', '_org_key = 9', 9))
      .to.equal('SELECT _org, _pos FROM f_overlay1."workspaces" WHERE _org_key = 9');
  });

  it('reads any other from the base alone, or from the base less what the whole layer replaced of it, and the whole layer', () => {
    expect(partRows(['f_base'], null, '"workspaces"', 'external_id', '_org', '_org_key = 4', 4)).to.equal('SELECT _org FROM f_base."workspaces" WHERE _org_key = 4');
    const sql = partRows(['f_base', 'f_whole'], null, '"workspaces"', 'external_id', '_org', '_org_key = 4', 4);
    expect(sql).to.include('FROM f_base."workspaces" b ANTI JOIN (SELECT id FROM f_whole.replaced_workspaces WHERE _org_key = 4)');
    expect(sql).to.include('UNION ALL SELECT _org FROM f_whole."workspaces" WHERE _org_key = 4');
    expect(sql).to.not.include('overlay');
  });
});

describe('layers: which an organization reads', () => {
  const set = {
    base: 'base', whole: 'whole', major: 'major', minor: 'minor', overlayOf: (o: string) => (o === 'o' ? 'overlay' : null),
    wholeHolds: new Set(['w', 'wd']), runHolds: new Set(['r', 'o']), majorHolds: new Set(['wd', 'r', 'o']), minorHolds: new Set(['r', 'b']),
  };
  it('reads the file holding it whole alone where no delta holds it', () => {
    expect(organizationLayers('w', set)).to.deep.equal({ stack: ['whole'], whole: 'whole' });
    expect(organizationLayers('wd', set)).to.deep.equal({ stack: ['whole', 'major'], whole: 'whole' });
  });
  it('reads a run between its lowest layer, the base or an overlay, and the deltas', () => {
    expect(organizationLayers('r', set)).to.deep.equal({ stack: ['base', 'whole', 'major', 'minor'], whole: null });
    expect(organizationLayers('o', set)).to.deep.equal({ stack: ['overlay', 'whole', 'major'], whole: 'overlay' });
    expect(organizationLayers('o', { ...set, runHolds: new Set(['r']) })).to.deep.equal({ stack: ['overlay', 'major'], whole: 'overlay' });
  });
  it('reads the base and the deltas that hold it otherwise, and no run without a whole layer', () => {
    expect(organizationLayers('b', set)).to.deep.equal({ stack: ['base', 'minor'], whole: null });
    expect(organizationLayers('r', { ...set, whole: null })).to.deep.equal({ stack: ['base', 'major', 'minor'], whole: null });
  });
});

describe('layers: the runs that stand', () => {
  it('are those whose lowest layer is still the file they lie over', () => {
    const m = {
      database: 'snapshot.duckdb', whole: 'whole-9.duckdb', wholeOrganizations: ['w'],
      wholeRuns: { r: 'snapshot.duckdb', k: 'whole-4.duckdb', gone: 'whole-4.duckdb', moved: 'snapshot.duckdb' },
      overlays: [{ file: 'whole-4.duckdb', id: 's4', organizations: { k: 2 } as Record<string, number> }, { file: 'overlay-7.duckdb', id: 's7', organizations: { moved: 3 } }],
    };
    // gone's lowest layer is the base now (its kept layer no longer holds it); moved's a batch's overlay.
    expect([...standingRuns(m)].sort()).to.deep.equal(['k', 'r']);
    expect([...standingRuns({ ...m, whole: undefined })]).to.deep.equal([]);
    // Listed by name alone, as the first manifests with runs did: over the base.
    expect([...standingRuns({ ...m, wholeRuns: ['r', 'k'] as unknown as Record<string, string> })]).to.deep.equal(['r']);
  });
});

describe('layers: an overlay\'s organization under a run of the whole layer', () => {
  it('is read from the overlay less what the run replaces, then the run, in the schema and alone', () => {
    const [sql] = underStatements('f_under', ['f_base', 'f_whole'], [{ alias: 'f_overlay0', organizations: { a: 1, r: 2 }, runs: { r: 2 } }]).slice(1);
    expect(sql).to.contain('UNION ALL SELECT * FROM f_overlay0."workspaces" WHERE _org_key IN (1)');
    expect(sql).to.contain('ANTI JOIN (SELECT _org_key, id FROM f_whole.replaced_workspaces) r0 ON r0.id = b."external_id" AND r0._org_key = b._org_key) WHERE _org_key IN (2)');
    expect(sql).to.contain('UNION ALL SELECT * FROM f_whole."workspaces" WHERE _org_key IN (2)');
    const alone = partRows(['f_base', 'f_whole'], 'f_overlay0', '"workspaces"', 'external_id', '_org', '_org_key = 2', 2, true);
    expect(alone).to.equal(`SELECT _org FROM (SELECT b.* FROM f_overlay0."workspaces" b ANTI JOIN (SELECT id FROM f_whole.replaced_workspaces WHERE _org_key = 2) r0 ON r0.id = b."external_id") b WHERE _org_key = 2
  UNION ALL SELECT _org FROM f_whole."workspaces" WHERE _org_key = 2`);
  });
});
