// parseQueryParameters (src/query/parse-query.ts) over decodeQueryString, interface §1, §4 and §5.
import { expect } from 'chai';
import { decodeQueryString } from '../../src/query/query-string.js';
import { parseQueryParameters, type ParsedRequest } from '../../src/query/parse-query.js';
import { parseDatetime } from '../../src/query/values.js';
import { ApiError } from '../../src/errors.js';
import { catalogFor } from '../../src/catalog/catalog.js';

const parse = (raw: string, engine = 'terraform'): ParsedRequest => parseQueryParameters(engine, decodeQueryString(raw));

function fails(raw: string, engine = 'terraform'): ApiError {
  try {
    parse(raw, engine);
  } catch (e) {
    expect(e, raw).to.be.instanceOf(ApiError);
    return e as ApiError;
  }
  expect.fail(`expected a 400 for ${raw}`);
}

/** Asserts a 400 whose source.parameter is exactly `parameter`. */
function rejects(raw: string, parameter: string, engine = 'terraform'): ApiError {
  const e = fails(raw, engine);
  expect(e.status, raw).to.equal(400);
  expect(e.source, raw).to.deep.equal({ parameter });
  return e;
}

const WS = 'type=workspaces';
const conditions = (raw: string) =>
  parse(raw).query.conditions.map((c) => ({ field: c.field.name, operator: c.operator, values: c.values }));
const fieldNames = (raw: string, engine = 'terraform') => parse(raw, engine).query.fields.map((f) => f.name);
const sortKeys = (raw: string) => parse(raw).query.sort.map((s) => (s.descending ? '-' : '') + s.field.name);

describe('parseQueryParameters', () => {
  describe('type', () => {
    it('is required', () => {
      rejects('', 'type');
      rejects('sort=workspace_name', 'type');
    });

    it('must name a view', () => {
      rejects('type=nope', 'type');
      rejects('type=Workspaces', 'type');
      rejects('type=', 'type');
      rejects('type=visibility-workspace', 'type');
    });

    it('accepts the four views', () => {
      for (const v of ['workspaces', 'tf_versions', 'providers', 'modules']) expect(parse(`type=${v}`).query.view.name).to.equal(v);
    });
  });

  describe('filters: keys', () => {
    it('rejects an unknown field naming the whole decoded key', () => {
      rejects(`${WS}&filter%5B0%5D%5Bnope%5D%5Bis%5D%5B0%5D=a`, 'filter[0][nope][is][0]');
      rejects(`${WS}&filter[0][Workspace_Name][is][0]=a`, 'filter[0][Workspace_Name][is][0]');
      // registry_type belongs to providers / modules only (interface §2)
      rejects(`${WS}&filter[0][registry_type][is][0]=public`, 'filter[0][registry_type][is][0]');
      rejects('type=tf_versions&filter[0][name][is][0]=a', 'filter[0][name][is][0]');
    });

    it('rejects an operator the field type does not support, naming the key', () => {
      rejects(`${WS}&filter[0][workspace_name][gt][0]=a`, 'filter[0][workspace_name][gt][0]');
      rejects(`${WS}&filter[0][checks_failed][contains][0]=1`, 'filter[0][checks_failed][contains][0]');
      rejects(`${WS}&filter[0][drifted][is_not][0]=true`, 'filter[0][drifted][is_not][0]');
      rejects(`${WS}&filter[0][workspace_created_at][is][0]=2023-01-01`, 'filter[0][workspace_created_at][is][0]');
      rejects(`${WS}&filter[0][workspace_created_at][gt][0]=2023-01-01`, 'filter[0][workspace_created_at][gt][0]');
      rejects(`${WS}&filter[0][checks_failed][is_before][0]=2023-01-01`, 'filter[0][checks_failed][is_before][0]');
      rejects(`${WS}&filter[0][drifted][contains][0]=t`, 'filter[0][drifted][contains][0]');
      rejects(`${WS}&filter[0][checks_failed][does_not_contain][0]=1`, 'filter[0][checks_failed][does_not_contain][0]');
    });

    it('rejects an unknown operator, naming the key', () => {
      rejects(`${WS}&filter[0][workspace_name][like][0]=a`, 'filter[0][workspace_name][like][0]');
      rejects(`${WS}&filter[0][workspace_name][IS][0]=a`, 'filter[0][workspace_name][IS][0]');
      rejects(`${WS}&filter[0][workspace_name][][0]=a`, 'filter[0][workspace_name][][0]');
    });

    it('rejects a bad index or shape, naming the whole decoded key', () => {
      for (const key of [
        'filter[a][workspace_name][is][0]',
        'filter[0][workspace_name][is][a]',
        'filter[-1][workspace_name][is][0]',
        'filter[0][workspace_name][is][-1]',
        'filter[1.5][workspace_name][is][0]',
        'filter[ 0][workspace_name][is][0]',
        'filter[][workspace_name][is][0]',
        'filter[0][workspace_name][is][]',
        'filter[0][workspace_name][is]',
        'filter[0][workspace_name]',
        'filter[0]',
        'filter[]',
        'filter',
        'filter[0][workspace_name][is][0][0]',
        'filter[0][workspace_name][is][0]x',
      ]) {
        rejects(`${WS}&${key.replace(/\[/g, '%5B').replace(/\]/g, '%5D')}=a`, key);
      }
    });

    it('the first bad filter is the one named, whatever comes after it', () => {
      rejects(`${WS}&filter[0][workspace_name][is][0]=a&filter[1][checks_failed][gt][0]=x&filter[2][nope][is][0]=b`, 'filter[1][checks_failed][gt][0]');
    });

    it('accepts large whole-number indexes and treats 0 and 00 as the same index', () => {
      expect(conditions(`${WS}&filter[99999999999999999999][workspace_name][is][0]=a`)).to.deep.equal([
        { field: 'workspace_name', operator: 'is', values: ['a'] },
      ]);
      expect(conditions(`${WS}&filter[0][workspace_name][is][0]=a&filter[00][workspace_name][is][1]=b`)).to.deep.equal([
        { field: 'workspace_name', operator: 'is', values: ['a', 'b'] },
      ]);
    });
  });

  describe('filters: values', () => {
    it('rejects values that do not parse as the field type, naming the key', () => {
      const bad: [string, string, string][] = [
        ['checks_failed', 'is', 'abc'],
        ['checks_failed', 'gt', '1e3'],
        ['checks_failed', 'gt', '.5'],
        ['checks_failed', 'gt', '1.'],
        ['checks_failed', 'lteq', '%2B1'],
        ['checks_failed', 'is', ''],
        ['drifted', 'is', 'yes'],
        ['drifted', 'is', '1'],
        ['drifted', 'is', ''],
        ['workspace_created_at', 'is_before', '2023-02-30'],
        ['workspace_created_at', 'is_before', '2023-13-01'],
        ['workspace_created_at', 'is_after', '2023-01-01T25:00'],
        ['workspace_created_at', 'is_after', '2023-01-01T10:60'],
        ['workspace_created_at', 'is_after', '2023-01-01T10:00:60'],
        ['workspace_created_at', 'is_after', '2023-04-31'],
        ['workspace_created_at', 'is_after', '1900-02-29'],
        ['workspace_created_at', 'is_after', '2023-1-01'],
        ['workspace_created_at', 'is_after', '2023-01-01T10'],
        ['workspace_created_at', 'is_after', '2023-01-01T10:00:00.'],
        ['workspace_created_at', 'is_after', '2023-01-01T10:00%2B0200'],
        ['workspace_created_at', 'is_after', 'yesterday'],
        ['workspace_created_at', 'is_after', ''],
      ];
      for (const [field, op, value] of bad) rejects(`${WS}&filter[3][${field}][${op}][0]=${value}`, `filter[3][${field}][${op}][0]`);
    });

    it('binds typed values: booleans in any case, numbers, datetimes in UTC', () => {
      expect(conditions(`${WS}&filter[0][drifted][is][0]=TRUE&filter[1][all_checks_succeeded][is][0]=fAlSe`)).to.deep.equal([
        { field: 'drifted', operator: 'is', values: [true] },
        { field: 'all_checks_succeeded', operator: 'is', values: [false] },
      ]);
      expect(conditions(`${WS}&filter[0][checks_failed][gteq][0]=-1.50&filter[1][checks_passed][lt][0]=007`)).to.deep.equal([
        { field: 'checks_failed', operator: 'gteq', values: ['-1.50'] },
        { field: 'checks_passed', operator: 'lt', values: ['007'] },
      ]);
      expect(conditions(`${WS}&filter[0][workspace_created_at][is_after][0]=2024-01-01T02:00%2B02:00`)).to.deep.equal([
        { field: 'workspace_created_at', operator: 'is_after', values: ['2024-01-01 00:00:00.000'] },
      ]);
    });

    it('keeps string values exactly for is / is_not and ASCII-folds them for contains', () => {
      expect(conditions(`${WS}&filter[0][workspace_name][is][0]=Pay+%C3%89&filter[0][workspace_name][contains][0]=Pay+%C3%89`)).to.deep.equal([
        { field: 'workspace_name', operator: 'is', values: ['Pay É'] },
        { field: 'workspace_name', operator: 'contains', values: ['pay É'] },
      ]);
    });

    it('lets the value of is_empty / is_not_empty be empty or anything, for every type', () => {
      expect(conditions(`${WS}&filter[0][workspace_name][is_empty][0]=&filter[1][checks_failed][is_not_empty][0]=abc&filter[2][drifted][is_empty][0]=&filter[3][workspace_created_at][is_empty][0]=&filter[4][current_run_applied_at][is_not_empty][0]=x`)).to.deep.equal([
        { field: 'workspace_name', operator: 'is_empty', values: [] },
        { field: 'checks_failed', operator: 'is_not_empty', values: [] },
        { field: 'drifted', operator: 'is_empty', values: [] },
        { field: 'workspace_created_at', operator: 'is_empty', values: [] },
        { field: 'current_run_applied_at', operator: 'is_not_empty', values: [] },
      ]);
    });

    it('accepts is_empty with no = at all', () => {
      expect(conditions(`${WS}&filter[0][vcs_repo_identifier][is_empty][0]`)).to.deep.equal([
        { field: 'vcs_repo_identifier', operator: 'is_empty', values: [] },
      ]);
    });
  });

  describe('filters: operator spellings', () => {
    it('treats does not contain, does+not+contain (raw and %2B-encoded) and does_not_contain as one operator', () => {
      const spellings = ['does%20not%20contain', 'does+not+contain', 'does%2Bnot%2Bcontain', 'does_not_contain'];
      for (const s of spellings) {
        expect(conditions(`${WS}&filter[0][workspace_name][${s}][0]=X`), s).to.deep.equal([
          { field: 'workspace_name', operator: 'does not contain', values: ['x'] },
        ]);
      }
    });

    it('groups values given under different spellings of the same operator into one condition', () => {
      expect(conditions(`${WS}&filter[0][workspace_name][does_not_contain][0]=a&filter[0][workspace_name][does+not+contain][1]=b`)).to.deep.equal([
        { field: 'workspace_name', operator: 'does not contain', values: ['a', 'b'] },
      ]);
    });
  });

  describe('filters: grouping and limits', () => {
    it('keeps two fields under the same index as two conditions', () => {
      expect(conditions(`${WS}&filter[0][workspace_name][contains][0]=a&filter[0][project_name][is][0]=b`)).to.deep.equal([
        { field: 'workspace_name', operator: 'contains', values: ['a'] },
        { field: 'project_name', operator: 'is', values: ['b'] },
      ]);
    });

    it('keeps the same field and operator under different indexes as two conditions', () => {
      expect(conditions(`${WS}&filter[0][workspace_name][contains][0]=a&filter[1][workspace_name][contains][0]=b`)).to.deep.equal([
        { field: 'workspace_name', operator: 'contains', values: ['a'] },
        { field: 'workspace_name', operator: 'contains', values: ['b'] },
      ]);
    });

    it('groups several values j of one (i, field, operator) into one condition, dropping repeats', () => {
      expect(conditions(`${WS}&filter[0][workspace_name][is][0]=a&filter[0][workspace_name][is][1]=b&filter[0][workspace_name][is][7]=a&filter[0][workspace_name][is_not][0]=c`)).to.deep.equal([
        { field: 'workspace_name', operator: 'is', values: ['a', 'b'] },
        { field: 'workspace_name', operator: 'is_not', values: ['c'] },
      ]);
    });

    const many = (n: number, key: (i: number) => string) => Array.from({ length: n }, (_, i) => `${key(i)}=v${i}`).join('&');

    it('accepts 50 distinct conditions and rejects 51 with source.parameter filter', () => {
      expect(parse(`${WS}&${many(50, (i) => `filter[${i}][workspace_name][is][0]`)}`).query.conditions).to.have.length(50);
      const e = rejects(`${WS}&${many(51, (i) => `filter[${i}][workspace_name][is][0]`)}`, 'filter');
      expect(e.detail).to.contain('50');
    });

    it('counts distinct (index, field, operator) triples, also under a single index', () => {
      const fields = catalogFor('terraform').view('workspaces')!.fields;
      // 26 fields × 2 emptiness operators = 52 distinct conditions under index 0
      const keys = fields.flatMap((f) => [`filter[0][${f.name}][is_empty][0]=`, `filter[0][${f.name}][is_not_empty][0]=`]);
      expect(keys.length).to.be.greaterThan(50);
      rejects(`${WS}&${keys.join('&')}`, 'filter');
      rejects(`${WS}&${keys.slice(0, 51).join('&')}`, 'filter');
      expect(parse(`${WS}&${keys.slice(0, 50).join('&')}`).query.conditions).to.have.length(50);
    });

    it('accepts 100 values and rejects 101 with source.parameter filter', () => {
      const c = parse(`${WS}&${many(100, (j) => `filter[0][workspace_name][is][${j}]`)}`).query.conditions;
      expect(c).to.have.length(1);
      expect(c[0]!.values).to.have.length(100);
      rejects(`${WS}&${many(101, (j) => `filter[0][workspace_name][is][${j}]`)}`, 'filter');
      // values spread over few conditions count too
      rejects(`${WS}&${many(101, (j) => `filter[${j % 3}][workspace_name][contains][${j}]`)}`, 'filter');
    });
  });

  describe('fields', () => {
    it('accepts fields=a,b and fields[<view>]=a,b alike', () => {
      expect(fieldNames(`${WS}&fields=workspace_name,drifted`)).to.deep.equal(['workspace_name', 'drifted']);
      expect(fieldNames(`${WS}&fields[workspaces]=workspace_name,drifted`)).to.deep.equal(['workspace_name', 'drifted']);
      expect(fieldNames(`${WS}&fields%5Bworkspaces%5D=workspace_name%2Cdrifted`)).to.deep.equal(['workspace_name', 'drifted']);
      expect(fieldNames('type=tf_versions&fields[tf_versions]=workspaces,version')).to.deep.equal(['workspaces', 'version']);
    });

    it('drops duplicates and keeps the request order', () => {
      expect(fieldNames(`${WS}&fields=workspace_name,drifted,workspace_name,checks_failed,drifted`)).to.deep.equal(['workspace_name', 'drifted', 'checks_failed']);
    });

    it('defaults to every field of the view, alphabetical', () => {
      for (const view of catalogFor('terraform').views) {
        const names = fieldNames(`type=${view.name}`);
        expect(names).to.deep.equal([...names].sort());
        expect(names).to.deep.equal(view.fields.map((f) => f.name));
      }
      expect(fieldNames('type=providers')).to.deep.equal(['curated', 'name', 'registry_type', 'source', 'version', 'workspace_count', 'workspaces']);
    });

    it('rejects an unknown field naming the parameter as sent', () => {
      rejects(`${WS}&fields=workspace_name,nope`, 'fields');
      rejects(`${WS}&fields[workspaces]=nope`, 'fields[workspaces]');
      rejects('type=tf_versions&fields=name', 'fields');
    });

    it('rejects both fields and fields[<view>] for the queried view', () => {
      const e = fails(`${WS}&fields=drifted&fields[workspaces]=drifted`);
      expect(e.status).to.equal(400);
      expect(['fields', 'fields[workspaces]']).to.include(e.source?.parameter);
    });

    it('ignores fields[<other view>]', () => {
      expect(fieldNames(`${WS}&fields[providers]=name`)).to.have.length(catalogFor('terraform').view('workspaces')!.fields.length);
      expect(fieldNames(`${WS}&fields=drifted&fields[providers]=nope`)).to.deep.equal(['drifted']);
    });

    it('rejects fields[<not a view>]', () => {
      rejects(`${WS}&fields[nope]=workspace_name`, 'fields[nope]');
    });
  });

  describe('sort', () => {
    it('accepts several keys, each optionally -prefixed', () => {
      expect(sortKeys(`${WS}&sort=-drifted,workspace_name,-checks_failed`)).to.deep.equal(['-drifted', 'workspace_name', '-checks_failed']);
      expect(sortKeys(`${WS}&sort=-workspace_terraform_version`)).to.deep.equal(['-workspace_terraform_version']);
    });

    it('rejects an unknown key with source.parameter sort', () => {
      rejects(`${WS}&sort=nope`, 'sort');
      rejects(`${WS}&sort=workspace_name,-nope`, 'sort');
      rejects(`${WS}&sort=name`, 'sort');
      rejects(`${WS}&sort=-`, 'sort');
      rejects(`${WS}&sort=--workspace_name`, 'sort');
      rejects(`${WS}&sort=%2Bworkspace_name`, 'sort');
    });

    it('defaults per view (interface §5)', () => {
      expect(sortKeys(WS)).to.deep.equal(['workspace_name']);
      expect(sortKeys('type=tf_versions')).to.deep.equal(['-version']);
      expect(sortKeys('type=providers')).to.deep.equal(['name', '-version']);
      expect(sortKeys('type=modules')).to.deep.equal(['name', '-version']);
    });
  });

  describe('page', () => {
    const page = (raw: string) => parse(raw).query.page;

    it('defaults to page 1 of 20', () => {
      expect(page(WS)).to.deep.equal({ number: 1, size: 20 });
    });

    it('takes page[size] up to 100 and clamps larger sizes to 100', () => {
      expect(page(`${WS}&page[size]=1`)).to.deep.equal({ number: 1, size: 1 });
      expect(page(`${WS}&page[size]=100`)).to.deep.equal({ number: 1, size: 100 });
      expect(page(`${WS}&page[size]=101`)).to.deep.equal({ number: 1, size: 100 });
      expect(page(`${WS}&page%5Bsize%5D=1000000000000000000000000000000`)).to.deep.equal({ number: 1, size: 100 });
    });

    it('rejects a page[size] below 1 or not an integer', () => {
      for (const v of ['0', '-1', '1.5', 'abc', '', '1e2', '%2B5', '%205', '00']) rejects(`${WS}&page[size]=${v}`, 'page[size]');
    });

    it('takes page[number] as a whole number of at least 1', () => {
      expect(page(`${WS}&page[number]=3&page[size]=7`)).to.deep.equal({ number: 3, size: 7 });
      expect(page(`${WS}&page[number]=9007199254740991`)).to.deep.equal({ number: 9007199254740991, size: 20 });
    });

    it('rejects a page[number] below 1 or not an integer', () => {
      for (const v of ['0', '-1', '1.0', 'abc', '', 'one', '00']) rejects(`${WS}&page[number]=${v}`, 'page[number]');
    });

    it('rejects a page[number] beyond Number.MAX_SAFE_INTEGER (documented choice), e.g. 10^30', () => {
      rejects(`${WS}&page[number]=1${'0'.repeat(30)}`, 'page[number]');
      rejects(`${WS}&page[number]=9007199254740992`, 'page[number]');
    });
  });

  describe('engine naming (interface §1)', () => {
    it('uses workspace_<engine>_version and state_version_<engine>_version', () => {
      expect(fieldNames(`${WS}&fields=workspace_opentofu_version,state_version_opentofu_version`, 'opentofu')).to.deep.equal([
        'workspace_opentofu_version',
        'state_version_opentofu_version',
      ]);
      rejects(`${WS}&fields=workspace_terraform_version`, 'fields', 'opentofu');
      rejects(`${WS}&filter[0][workspace_terraform_version][is][0]=1.0.0`, 'filter[0][workspace_terraform_version][is][0]', 'opentofu');
      rejects(`${WS}&sort=state_version_terraform_version`, 'sort', 'opentofu');
      rejects(`${WS}&fields=workspace_opentofu_version`, 'fields', 'terraform');
    });

    it('keeps the default field order alphabetical by the engine-specific name', () => {
      const names = fieldNames(WS, 'aaa');
      expect(names).to.deep.equal([...names].sort());
      expect(names.slice(-5)).to.deep.equal(['vcs_repo_identifier', 'workspace_aaa_version', 'workspace_created_at', 'workspace_name', 'workspace_updated_at']);
      expect(fieldNames(WS, 'zzz').slice(-4)).to.deep.equal(['workspace_created_at', 'workspace_name', 'workspace_updated_at', 'workspace_zzz_version']);
      expect(fieldNames(WS, 'terraform').slice(-4)).to.deep.equal(['workspace_created_at', 'workspace_name', 'workspace_terraform_version', 'workspace_updated_at']);
    });

    it('refuses an engine name outside ^[a-z][a-z0-9]*$', () => {
      for (const e of ['OpenTofu', 'open-tofu', '1tofu', '', 'tofu_x']) expect(() => catalogFor(e), e).to.throw(Error);
      expect(catalogFor('tofu2').view('workspaces')!.field('workspace_tofu2_version')?.column).to.equal('workspace_engine_version');
    });

    it('never renames the tf_versions view', () => {
      expect(parse('type=tf_versions', 'opentofu').query.view.name).to.equal('tf_versions');
      rejects('type=opentofu_versions', 'type', 'opentofu');
    });
  });

  describe('carried parameters', () => {
    it('keeps type, sort, fields and filter keys as received (decoded) and drops paging and unknown ones', () => {
      const { carried } = parse('foo=bar&sort=-drifted&page%5Bnumber%5D=2&page[size]=5&fields=drifted,workspace_name,drifted&filter%5B0%5D%5Bworkspace_name%5D%5Bdoes+not+contain%5D%5B0%5D=a+b&type=workspaces&page[other]=1');
      expect(carried).to.deep.equal([
        ['type', 'workspaces'],
        ['sort', '-drifted'],
        ['fields', 'drifted,workspace_name,drifted'],
        ['filter[0][workspace_name][does not contain][0]', 'a b'],
      ]);
    });

    it('keeps a filter value as sent, not as bound', () => {
      const { carried } = parse(`${WS}&filter[0][workspace_name][contains][0]=ABC&filter[0][workspace_created_at][is_after][0]=2024-01-01T02:00%2B02:00&filter[0][drifted][is][0]=TRUE`);
      expect(carried.slice(1)).to.deep.equal([
        ['filter[0][workspace_name][contains][0]', 'ABC'],
        ['filter[0][workspace_created_at][is_after][0]', '2024-01-01T02:00+02:00'],
        ['filter[0][drifted][is][0]', 'TRUE'],
      ]);
    });

    it('keeps fields[<view>] under its own key', () => {
      expect(parse(`${WS}&fields[workspaces]=drifted`).carried).to.deep.equal([
        ['type', 'workspaces'],
        ['fields[workspaces]', 'drifted'],
      ]);
    });
  });
});

describe('parseDatetime (interface §4)', () => {
  it('converts to UTC YYYY-MM-DD HH:MM:SS.mmm', () => {
    const cases: [string, string][] = [
      ['2024-01-01', '2024-01-01 00:00:00.000'],
      ['2024-01-01T10:20', '2024-01-01 10:20:00.000'],
      ['2024-01-01T10:20:30', '2024-01-01 10:20:30.000'],
      ['2024-01-01T10:20:30Z', '2024-01-01 10:20:30.000'],
      ['2024-01-01T02:00+02:00', '2024-01-01 00:00:00.000'],
      ['2024-01-01T00:00-01:30', '2024-01-01 01:30:00.000'],
      ['2024-03-01T01:00+02:00', '2024-02-29 23:00:00.000'],
      ['2023-12-31T23:30-00:45', '2024-01-01 00:15:00.000'],
      ['2024-01-01T10:20:30.5', '2024-01-01 10:20:30.500'],
      ['2024-01-01T10:20:30.12', '2024-01-01 10:20:30.120'],
      ['2024-01-01T10:20:30.123999999Z', '2024-01-01 10:20:30.123'],
      ['2000-02-29T23:59:59.9999999-05:00', '2000-03-01 04:59:59.999'],
      ['0099-12-31T23:59:59Z', '0099-12-31 23:59:59.000'],
      ['0000-02-29', '0000-02-29 00:00:00.000'],
      ['9999-12-31T23:59:59.999', '9999-12-31 23:59:59.999'],
    ];
    for (const [input, expected] of cases) expect(parseDatetime(input), input).to.equal(expected);
  });

  it('rejects impossible dates and times', () => {
    for (const v of ['2023-02-29', '2023-02-30', '2023-13-01', '2023-00-01', '2023-01-00', '2023-01-32', '2023-01-01T24:00', '2023-01-01T25:00', '2023-01-01T00:60', '2023-01-01T00:00:60', '2023-01-01T00:00+24:00', '2023-01-01T00:00+00:60', '2023-01-01T00:00z', '2023-01-01 00:00', '20230101']) {
      expect(() => parseDatetime(v), v).to.throw(Error);
    }
  });
});
