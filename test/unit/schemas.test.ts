// The committed JSON Schemas in schemas/generated/ (written by `node dist/src/catalog/write-schemas.js`,
// part of `npm run build`) must equal what the catalog renders now, and list exactly the views' fields.
import { expect } from 'chai';
import { CONTRACT } from '../helpers/contract-fields.js';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { renderSchemas } from '../../src/catalog/write-schemas.js';
import { catalogFor } from '../../src/catalog/catalog.js';

// dist/test/unit/schemas.test.js → <repo>/schemas/generated/
const GENERATED = fileURLToPath(new URL('../../../schemas/generated/', import.meta.url));

type Json = Record<string, any>;

/** docs/interface.md operator table, plus interface §4 (emptiness tests on datetimes). */
const OPERATORS: Record<string, string[]> = {
  boolean: ['is', 'is_empty', 'is_not_empty'],
  number: ['is', 'is_not', 'gt', 'lt', 'gteq', 'lteq', 'is_empty', 'is_not_empty'],
  string: ['is', 'is_not', 'contains', 'does not contain', 'is_empty', 'is_not_empty'],
  datetime: ['is_before', 'is_after', 'is_empty', 'is_not_empty'],
};

function committed(name: string): string {
  const path = GENERATED + name;
  expect(existsSync(path), `${path} is missing: run \`npm run build\` (or node dist/src/catalog/write-schemas.js) and commit schemas/generated/`).to.equal(true);
  return readFileSync(path, 'utf8');
}

describe('schemas/generated', () => {
  const rendered = renderSchemas();

  it('renders the query-type schema and one schema per view, and per view read across organizations', () => {
    expect([...rendered.keys()].sort()).to.deep.equal([
      'page.schema.json',
      'query-across-modules.schema.json',
      'query-across-providers.schema.json',
      'query-across-resources.schema.json',
      'query-across-tf_versions.schema.json',
      'query-across-workspaces.schema.json',
      'query-modules.schema.json',
      'query-providers.schema.json',
      'query-resources.schema.json',
      'query-tf_versions.schema.json',
      'query-type.schema.json',
      'query-workspaces.schema.json',
    ]);
  });

  it('holds exactly the rendered files, no missing and no stale ones', () => {
    expect(existsSync(GENERATED), `${GENERATED} is missing: run \`npm run build\``).to.equal(true);
    const present = readdirSync(GENERATED).filter((f) => f.endsWith('.json')).sort();
    expect(present).to.deep.equal([...rendered.keys()].sort());
  });

  for (const name of renderSchemas().keys()) {
    it(`${name} equals the catalog rendering byte for byte (regenerate after a catalog change)`, () => {
      expect(committed(name)).to.equal(rendered.get(name));
    });
  }

  it('query-type lists the five views', () => {
    const schema = JSON.parse(rendered.get('query-type.schema.json')!) as Json;
    expect(schema.$schema).to.equal('http://json-schema.org/draft-07/schema#');
    expect(schema.$id).to.equal('query-type');
    expect(schema.enum).to.deep.equal(['workspaces', 'tf_versions', 'providers', 'modules', 'resources']);
  });

  for (const view of catalogFor('terraform').views) {
    it(`query-across-${view.name}.schema.json: organization_name first, then the view's contract fields`, () => {
      const schema = JSON.parse(rendered.get(`query-across-${view.name}.schema.json`)!) as Json;
      const names = ['organization_name', ...Object.keys(CONTRACT[view.name]!).filter((n) => n !== 'organization_name')];
      expect(schema.$id).to.equal(`query-across-${view.name}`);
      expect(schema.properties.fields.items.enum).to.deep.equal(names);
      expect(schema.properties.filter.items.properties.field.enum).to.deep.equal(names);
      expect(catalogFor('terraform').across(view.name)!.defaultSort[0]).to.equal('organization_name');
    });

    describe(`query-${view.name}.schema.json`, () => {
      // The rendering, which the byte-for-byte tests above tie to the committed file.
      const load = () => JSON.parse(rendered.get(`query-${view.name}.schema.json`)!) as Json;
      const names = view.fields.map((f) => f.name);

      it('the catalog view has exactly the contract fields, with their types', () => {
        expect(Object.fromEntries(view.fields.map((f) => [f.name, f.type]))).to.deep.equal(CONTRACT[view.name]);
        expect(names).to.deep.equal([...names].sort()); // interface §2 default order
      });

      it('lists exactly the catalog fields in fields, sort (± prefix) and filter.field', () => {
        const schema = load();
        expect(schema.$schema).to.equal('http://json-schema.org/draft-07/schema#');
        expect(schema.$id).to.equal(`query-${view.name}`);
        expect(schema.properties.fields.items.enum).to.deep.equal(names);
        expect(schema.properties.sort.items.enum).to.deep.equal([...names, ...names.map((n) => `-${n}`)]);
        expect(schema.properties.filter.items.properties.field.enum).to.deep.equal(names);
        expect(schema.properties.filter.maxItems).to.equal(100);
      });

      it('allows, per field type, exactly the operators of that type', () => {
        const rules = load().properties.filter.items.allOf as Json[];
        const seen: string[] = [];
        for (const rule of rules) {
          const fields = rule.if.properties.field.enum as string[];
          const types = new Set(fields.map((n) => view.field(n)?.type));
          expect(types.size, `one type per rule: ${fields.join(', ')}`).to.equal(1);
          const type = [...types][0]!;
          expect(fields).to.deep.equal(view.fields.filter((f) => f.type === type).map((f) => f.name));
          expect([...(rule.then.properties.operator.enum as string[])].sort()).to.deep.equal([...OPERATORS[type]!].sort());
          seen.push(...fields);
        }
        expect(seen.sort()).to.deep.equal([...names].sort());
      });

      it('validates documents as the contract says', () => {
        const ajv = new Ajv({ strict: true, strictTypes: false });
        ajv.addSchema(JSON.parse(rendered.get('page.schema.json')!));
        const validate = ajv.compile(load());
        const byType = (t: string) => view.fields.find((f) => f.type === t)?.name;
        const str = byType('string')!;
        // resources has no number field: its number checks run on the other views.
        const num = byType('number');
        expect(validate({ filter: [{ field: str, operator: 'contains', value: 'x' }], fields: [str], sort: [`-${num ?? str}`] })).to.equal(true);
        if (num !== undefined) {
          expect(validate({ filter: [{ field: num, operator: 'gt', value: '-1.5' }] })).to.equal(true);
          expect(validate({ filter: [{ field: num, operator: 'gt', value: '1e3' }] })).to.equal(false);
          expect(validate({ filter: [{ field: num, operator: 'is_empty', value: 'anything' }] })).to.equal(true);
        }
        expect(validate({ filter: [{ field: str, operator: 'gt', value: 'x' }] })).to.equal(false);
        expect(validate({ filter: [{ field: 'nope', operator: 'is', value: 'x' }] })).to.equal(false);
        expect(validate({ filter: [], fields: ['nope'] })).to.equal(false);
        expect(validate({ filter: [], page: { number: '0' } })).to.equal(false);
        expect(validate({ filter: Array.from({ length: 101 }, () => ({ field: str, operator: 'is', value: 'x' })) })).to.equal(false);
      });
    });
  }

  it('renders the default engine: no schema mentions another engine name', () => {
    for (const [name, text] of rendered) expect(text, name).not.to.match(/_engine_|opentofu/);
    expect(rendered.get('query-workspaces.schema.json')).to.contain('"workspace_terraform_version"');
  });
});

describe('docs/views.md', () => {
  it('is the rendering of the catalog (run `npm run build` after changing a view)', async () => {
    const { renderViewDocs } = await import('../../src/catalog/render-docs.js');
    const { readFileSync } = await import('node:fs');
    const committed = readFileSync(new URL('../../../docs/views.md', import.meta.url), 'utf8');
    expect(committed).to.equal(renderViewDocs());
  });
});
