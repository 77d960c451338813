// Synthetic snapshot-source generator (format: docs/snapshot-source.md).
//
// Writes a directory of NDJSON files (plain, or gzip-compressed with `gzip`) that look like the inventory of
// a Terraform-Cloud-style platform: long-tailed organization sizes, projects, workspaces with engine
// versions, VCS repos, tags, runs, checks and drift, the providers, modules and resources of each workspace,
// and teams with members.
// Everything is drawn from a seeded PRNG (sfc32), so the same options always give byte-identical files.
//
// Built for volume: 1,000,000 workspaces (~5M provider rows, ~3M module rows) are written in one pass with
// string concatenation, ~1 MiB chunks and back-pressure on each stream; nothing but per-organization
// state is kept in memory.

import { once } from 'node:events';
import { createWriteStream, type WriteStream } from 'node:fs';
import type { Writable } from 'node:stream';
import { createGzip } from 'node:zlib';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { resourceCount, writeResources, type UsedProvider } from './sample-resources.js';

export interface SampleOptions {
  /** Number of organizations (clamped to `workspaces`). */
  organizations: number;
  /** Total number of workspaces over all organizations. */
  workspaces: number;
  /** PRNG seed; the same options give byte-identical files. */
  seed: number;
  /** false: no workspace_resources rows (and no resource counts), for a sample about workspaces alone. */
  resources?: boolean;
  /**
   * Writes `<file>.ndjson.gz` instead of `<file>.ndjson` (gzip level 1, beside the generation on libuv's
   * threads): a hundred million resources are about 30 GB as text.
   */
  gzip?: boolean;
  /** Called with (workspaces written, total) at most every 50,000 workspaces, and once at the end. */
  onProgress?: (written: number, total: number) => void;
}

export const SAMPLE_DEFAULTS: Readonly<{ organizations: number; workspaces: number; seed: number }> =
  Object.freeze({ organizations: 40, workspaces: 20000, seed: 1 });

/** The files a sample consists of, without the `.ndjson` extension. */
export const SAMPLE_FILES = [
  'organizations',
  'projects',
  'workspaces',
  'workspace_providers',
  'workspace_modules',
  'workspace_resources',
  'teams',
  'team_members',
] as const;
export type SampleFile = (typeof SAMPLE_FILES)[number];

export interface SampleSummary {
  /** The directory written. */
  dir: string;
  seed: number;
  /** Records (= lines) written per file, keyed by file name without `.ndjson`. */
  counts: Record<SampleFile, number>;
  /** Bytes written per file, keyed like `counts`. */
  bytes: Record<SampleFile, number>;
  /** Every organization with its number of workspaces, largest first (ties keep generation order). */
  organizations: Array<{ name: string; workspaces: number }>;
  /** Name of the largest organization (always `acme-corp`). */
  largestOrganization: string;
}

const PROGRESS_EVERY = 50_000;
const CHUNK_CHARS = 1 << 18;

// ---------------------------------------------------------------------------------------------------------
// PRNG

function splitmix32(seed: number): () => number {
  let state = seed | 0;
  return () => {
    state = (state + 0x9e3779b9) | 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return (z ^ (z >>> 16)) >>> 0;
  };
}

/** sfc32: small, fast, 128-bit state. */
class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number) {
    const lo = Math.floor(seed) >>> 0;
    const hi = Math.floor(seed / 4294967296) >>> 0;
    const sm = splitmix32(lo ^ Math.imul(hi, 0x27d4eb2d));
    this.a = sm();
    this.b = sm();
    this.c = sm() ^ hi;
    this.d = 1;
    for (let i = 0; i < 16; i++) this.u32();
  }

  u32(): number {
    const a = this.a;
    const b = this.b;
    const c = this.c;
    const t = (((a + b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = b ^ (b >>> 9);
    this.b = (c + (c << 3)) | 0;
    this.c = (((c << 21) | (c >>> 11)) + t) | 0;
    return t >>> 0;
  }

  /** Uniform in [0, 1). */
  float(): number {
    return this.u32() / 4294967296;
  }

  /** Uniform integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.float() * n);
  }

  /** Uniform integer in [lo, hi]. */
  range(lo: number, hi: number): number {
    return lo + Math.floor(this.float() * (hi - lo + 1));
  }

  chance(p: number): boolean {
    return this.float() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.float() * items.length)]!;
  }

  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = Math.floor(this.float() * (i + 1));
      const t = items[i]!;
      items[i] = items[j]!;
      items[j] = t;
    }
    return items;
  }
}

class Weighted<T> {
  readonly items: T[];
  readonly cum: Float64Array;
  readonly total: number;

  constructor(pairs: ReadonlyArray<readonly [T, number]>) {
    this.items = pairs.map((p) => p[0]);
    this.cum = new Float64Array(pairs.length);
    let t = 0;
    pairs.forEach((p, i) => {
      t += p[1];
      this.cum[i] = t;
    });
    this.total = t;
  }

  index(rng: Rng): number {
    const x = rng.float() * this.total;
    const cum = this.cum;
    let lo = 0;
    let hi = cum.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (x < cum[mid]!) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }

  pick(rng: Rng): T {
    return this.items[this.index(rng)]!;
  }
}

function binomial(n: number, p: number): Weighted<number> {
  const pairs: Array<[number, number]> = [];
  let c = 1;
  for (let k = 0; k <= n; k++) {
    pairs.push([k, c * p ** k * (1 - p) ** (n - k)]);
    c = (c * (n - k)) / (k + 1);
  }
  return new Weighted(pairs);
}

// ---------------------------------------------------------------------------------------------------------
// Identifiers: `<prefix>` + 16 base-62 characters. The first six encode a bijective scramble of a per-kind
// counter (62^6 > 2^32), so ids are unique by construction; the last ten are random.

const B62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

function permute32(i: number, key: number): number {
  let x = (i ^ key) >>> 0;
  x = Math.imul(x ^ (x >>> 16), 0x7feb352d);
  x = Math.imul(x ^ (x >>> 15), 0x846ca68b);
  return (x ^ (x >>> 16)) >>> 0;
}

function idHead(counter: number, key: number): string {
  let p = permute32(counter, key);
  let s = '';
  for (let j = 0; j < 6; j++) {
    s += B62[p % 62];
    p = Math.floor(p / 62);
  }
  return s;
}

function id16(counter: number, key: number, rng: Rng): string {
  let s = idHead(counter, key);
  for (let k = 0; k < 2; k++) {
    let r = rng.u32();
    for (let j = 0; j < 5; j++) {
      s += B62[r % 62];
      r = Math.floor(r / 62);
    }
  }
  return s;
}

// ---------------------------------------------------------------------------------------------------------
// Organization sizes

/**
 * Workspaces per organization, largest first: every organization has at least one, the counts sum to
 * `workspaces`, the sizes are Zipf-like (exponent 1). With 10 or more organizations the first holds 10% of
 * all workspaces; the others (ranks 2…n) follow weights 1/(rank + q) with the smallest q ≥ 0 that keeps
 * the second organization at most 3/4 of the first (q = 0, plain Zipf, with many organizations).
 */
export function organizationSizes(organizations: number, workspaces: number): number[] {
  const n = Math.min(organizations, workspaces);
  if (n <= 0) return [];
  if (n === 1) return [workspaces];
  if (n < 10) return zipfAllocate(n, workspaces, Infinity);
  let first = Math.max(1, Math.round(workspaces * 0.1));
  // With few organizations the others may not fit under 10% each; then the first takes its fair share.
  if (workspaces - first > (n - 1) * first) first = Math.ceil(workspaces / n);
  first = Math.min(first, workspaces - (n - 1));
  return [first, ...zipfAllocate(n - 1, workspaces - first, first * 0.75, 1)];
}

/** Shares `total` among `m` organizations with weights 1/(rank + offset + q), each getting at least one. */
function zipfAllocate(m: number, total: number, cap: number, offset = 0): number[] {
  const spare = total - m; // everyone gets one; `spare` is shared by weight
  const top = (q: number): number => {
    if (!Number.isFinite(q)) return total / m;
    let s = 0;
    for (let k = 1; k <= m; k++) s += 1 / (k + offset + q);
    return 1 + (spare * (1 / (1 + offset + q))) / s;
  };
  let q = 0;
  if (top(0) > cap) {
    if (total / m >= cap) q = Infinity;
    else {
      let lo = 0;
      let hi = 1;
      while (top(hi) > cap) hi *= 2;
      for (let i = 0; i < 60; i++) {
        const mid = (lo + hi) / 2;
        if (top(mid) > cap) lo = mid;
        else hi = mid;
      }
      q = hi;
    }
  }
  const weights = new Float64Array(m);
  let sum = 0;
  for (let k = 0; k < m; k++) {
    weights[k] = Number.isFinite(q) ? 1 / (k + 1 + offset + q) : 1;
    sum += weights[k]!;
  }
  const sizes = new Array<number>(m);
  const frac = new Float64Array(m);
  let given = 0;
  for (let k = 0; k < m; k++) {
    const exact = (spare * weights[k]!) / sum;
    const whole = Math.floor(exact);
    sizes[k] = 1 + whole;
    frac[k] = exact - whole;
    given += whole;
  }
  // Largest remainders get the leftover units; ties go to the earlier (larger) organization.
  const order = Array.from({ length: m }, (_, k) => k).sort((x, y) => frac[y]! - frac[x]! || x - y);
  for (let i = 0; given < spare; i++, given++) sizes[order[i % m]!]! += 1;
  return sizes.sort((x, y) => y - x);
}

// ---------------------------------------------------------------------------------------------------------
// Names

const FAMOUS_ORGS = [
  'globex', 'initech', 'umbrella', 'hooli', 'stark-industries', 'wayne-enterprises', 'cyberdyne',
  'soylent', 'tyrell', 'wonka', 'aperture', 'black-mesa', 'massive-dynamic', 'vandelay', 'dunder-mifflin',
  'pied-piper', 'oscorp', 'nakatomi', 'weyland-yutani', 'gringotts', 'monsters-inc', 'prestige-worldwide',
  'bluth-company', 'los-pollos', 'sterling-cooper', 'virtucon', 'contoso', 'fabrikam', 'Northwind_Traders',
  'tailspin', 'adventure-works', 'wingtip', 'litware', 'proseware', 'woodgrove', 'duff', 'gekko-co',
  'spacely-sprockets', 'cogswell-cogs', 'rekall', 'omni-consumer', 'tricell', 'blue-sun', 'ingen',
  'paper-street', 'kramerica', 'dharma', 'buy-n-large', 'planet-express', 'mom-corp', 'ollivanders',
  'sirius-cybernetics', 'zorg', 'abstergo', 'vault-tec', 'hanso', 'veridian', 'lacuna', 'yoyodyne',
  'callisto', 'cheers', 'central-perk', 'krusty-krab', 'acme-labs', 'genco', 'strickland', 'bebop',
];

const ADJECTIVES = [
  'agile', 'amber', 'ancient', 'azure', 'bold', 'brave', 'bright', 'calm', 'clever', 'cosmic', 'crimson',
  'daring', 'eager', 'electric', 'emerald', 'fast', 'fearless', 'gentle', 'golden', 'grand', 'happy',
  'hidden', 'humble', 'iron', 'jolly', 'keen', 'lively', 'lucky', 'lunar', 'mighty', 'modern', 'noble',
  'polar', 'quick', 'quiet', 'rapid', 'royal', 'silent', 'silver', 'solar', 'stellar', 'swift', 'tidy',
  'urban', 'vivid', 'wild', 'wise', 'zesty',
];
const NOUNS = [
  'anchor', 'arrow', 'badger', 'beacon', 'bison', 'bridge', 'canyon', 'cedar', 'comet', 'coral', 'delta',
  'eagle', 'ember', 'falcon', 'forge', 'fox', 'glacier', 'harbor', 'hawk', 'heron', 'island', 'lantern',
  'lynx', 'maple', 'meadow', 'mesa', 'nebula', 'oak', 'orbit', 'otter', 'panda', 'peak', 'pine', 'prairie',
  'quarry', 'raven', 'reef', 'ridge', 'river', 'rocket', 'sparrow', 'summit', 'tiger', 'tundra', 'valley',
  'willow', 'wolf', 'zephyr',
];

function organizationNames(n: number, rng: Rng): string[] {
  const names = ['acme-corp', ...FAMOUS_ORGS].slice(0, n);
  if (names.length < n) {
    const combos: string[] = [];
    for (const a of ADJECTIVES) for (const b of NOUNS) combos.push(`${a}-${b}`);
    rng.shuffle(combos);
    for (let i = 0; names.length < n; i++) {
      const round = Math.floor(i / combos.length);
      const base = combos[i % combos.length]!;
      names.push(round === 0 ? base : `${base}-${round + 1}`);
    }
  }
  return names;
}

const PROJECT_NAMES = [
  'payments', 'platform', 'data-lake', 'networking', 'security', 'identity', 'billing', 'observability',
  'checkout', 'search', 'mobile', 'analytics', 'ml-platform', 'shared-services', 'core-infra',
  'customer-portal', 'internal-tools', 'compliance', 'edge', 'messaging', 'storage', 'databases', 'ci-cd',
  'sandbox', 'R&D "Labs", EMEA', 'Équipe Données', 'Marketing Sites', 'logistics', 'fraud', 'streaming',
];

const SERVICES = [
  'payments', 'billing', 'checkout', 'auth', 'identity', 'orders', 'inventory', 'search', 'catalog',
  'shipping', 'notifications', 'email', 'analytics', 'reporting', 'data-lake', 'etl', 'ml', 'recommendations',
  'network', 'vpc', 'dns', 'cdn', 'edge', 'core', 'platform', 'shared', 'monitoring', 'logging',
  'observability', 'security', 'iam', 'secrets', 'vault', 'k8s', 'eks', 'gke', 'aks', 'cluster', 'ci',
  'build', 'artifacts', 'registry', 'frontend', 'web', 'mobile-backend', 'api-gateway', 'ledger', 'fraud',
  'risk', 'customer', 'crm', 'hr', 'finance', 'backup', 'dr', 'kafka', 'redis', 'postgres', 'warehouse',
];
const COMPONENTS = new Weighted<string>([
  ['', 30], ['api', 10], ['worker', 5], ['db', 5], ['cache', 3], ['queue', 2], ['infra', 8], ['app', 6],
  ['service', 4], ['core', 4], ['frontend', 2], ['backend', 3], ['cluster', 3], ['lambda', 2], ['jobs', 2],
]);
const ENVS = new Weighted<string>([
  ['prod', 30], ['production', 5], ['staging', 18], ['stage', 4], ['dev', 22], ['qa', 6], ['test', 5],
  ['sandbox', 4], ['uat', 3], ['perf', 1.5], ['demo', 1.5],
]);
const REGIONS: Record<string, string[]> = {
  aws: ['us-east-1', 'us-east-2', 'us-west-2', 'eu-west-1', 'eu-central-1', 'ap-southeast-2', 'ap-northeast-1'],
  azure: ['westeurope', 'northeurope', 'eastus2', 'westus3', 'uksouth'],
  google: ['europe-west4', 'us-central1', 'us-east4', 'asia-northeast1'],
};
REGIONS.multi = [...REGIONS.aws!, ...REGIONS.azure!, ...REGIONS.google!];
/** Rare names that exercise JSON escaping, CSV quoting, case folding and code-point ordering. */
const SPECIAL_NAMES = [
  'Café-API', 'ÉTL-job', 'Überwachung-prod', 'naïve-bayes-staging', 'données-prod', '東京-network',
  'Payments-API-Prod', 'PAYMENTS-api-prod', 'legacy "blue" stack', 'billing, invoices', 'ws with spaces',
  'rocket-🚀-launch', 'ｆｕｌｌｗｉｄｔｈ-prod', 'back\\slash-dev', 'Zürich-dr', 'a', 'Ω-omega',
  'quote"and,comma', 'tab\tname-qa',
  // exactly 255 characters, the longest name allowed
  'legacy-monolith-' + 'migration-'.repeat(23) + 'x'.repeat(9),
];

const FIRST_NAMES = [
  'alice', 'bob', 'carol', 'dave', 'erin', 'frank', 'grace', 'heidi', 'ivan', 'judy', 'mallory', 'niaj',
  'olivia', 'peggy', 'rupert', 'sybil', 'trent', 'victor', 'walter', 'yuki', 'zoe', 'amir', 'bea', 'chen',
  'dmitri', 'esra', 'farah', 'gustavo', 'hana', 'ines', 'jonas', 'kofi', 'lena', 'mateo', 'noor', 'priya',
];
const LAST_NAMES = [
  'smith', 'jones', 'garcia', 'chen', 'patel', 'kim', 'nguyen', 'mueller', 'rossi', 'silva', 'kowalski',
  'okafor', 'tanaka', 'dubois', 'haddad', 'larsen', 'novak', 'ortiz', 'brown', 'wilson',
];
const SERVICE_USERS = ['ci-bot', 'terraform-admin', 'jdoe', 'svc_deploy', 'Ops.Admin'];

// ---------------------------------------------------------------------------------------------------------
// Engine versions

const ENGINE_VERSIONS = new Weighted<string>([
  ['1.9.8', 14], ['1.9.5', 3], ['1.5.7', 12], ['1.5.5', 2], ['1.10.5', 10], ['1.10.3', 2], ['1.11.4', 8],
  ['1.12.2', 6], ['1.13.3', 4], ['1.14.0', 2], ['1.8.5', 7], ['1.7.5', 6], ['1.6.6', 7], ['1.4.6', 4],
  ['1.3.9', 4], ['1.2.9', 2], ['1.1.9', 1.5], ['1.0.11', 2], ['0.15.5', 1], ['0.14.11', 2.5],
  ['0.13.7', 1.2], ['0.12.31', 1.5], ['1.10.0-rc1', 0.15], ['1.12.0-alpha20250312', 0.08],
  ['latest', 0.4], ['~> 1.5.0', 0.3],
]);
/** Releases in ascending order, for "state written by a slightly older version". */
const RELEASES = [
  '0.12.31', '0.13.7', '0.14.11', '0.15.5', '1.0.11', '1.1.9', '1.2.9', '1.3.9', '1.4.6', '1.5.5', '1.5.7',
  '1.6.6', '1.7.5', '1.8.5', '1.9.5', '1.9.8', '1.10.3', '1.10.5', '1.11.4', '1.12.2', '1.13.3', '1.14.0',
];
const RELEASE_INDEX = new Map(RELEASES.map((v, i) => [v, i]));

// ---------------------------------------------------------------------------------------------------------
// Providers and modules

type Cloud = 'aws' | 'azure' | 'google' | 'multi';

interface OrgInfo {
  name: string;
  cloud: Cloud;
  privateRegistry: boolean;
  vcsOwner: string;
}

interface Variant {
  name: string;
  source: string | ((o: OrgInfo) => string);
  /** null: a module without a version (local or git source). */
  versions: Array<[string, number]> | null;
  registryType: 'public' | 'private' | null;
}

interface Slot {
  weight: (o: OrgInfo) => number;
  variants: Array<[Variant, number]>;
}

const cloudWeight = (cloud: Cloud, high: number, low: number) => (o: OrgInfo) =>
  o.cloud === cloud ? high : o.cloud === 'multi' ? high * 0.6 : low;
const fixed = (w: number) => () => w;
const privateOnly = (w: number) => (o: OrgInfo) => (o.privateRegistry ? w : 0);
const pub = (name: string, source: string, versions: Array<[string, number]>): Array<[Variant, number]> => [
  [{ name, source: `registry.terraform.io/${source}`, versions, registryType: 'public' }, 1],
];

const PROVIDER_SLOTS: Slot[] = [
  {
    weight: cloudWeight('aws', 14, 0.8),
    variants: pub('aws', 'hashicorp/aws', [
      ['6.2.0', 3], ['6.0.0', 2], ['5.82.2', 10], ['5.80.0', 6], ['5.75.1', 5], ['5.70.0', 4], ['5.62.0', 4],
      ['5.54.1', 4], ['5.46.0', 3], ['5.31.0', 6], ['5.17.0', 2], ['4.67.0', 5], ['4.48.0', 2], ['3.76.1', 2],
      ['3.74.0', 1],
    ]),
  },
  {
    weight: cloudWeight('azure', 14, 0.6),
    variants: pub('azurerm', 'hashicorp/azurerm', [
      ['4.14.0', 6], ['4.10.0', 4], ['3.116.0', 6], ['3.85.0', 3], ['3.75.0', 2], ['2.99.0', 2],
    ]),
  },
  {
    weight: cloudWeight('google', 14, 0.6),
    variants: pub('google', 'hashicorp/google', [
      ['6.14.1', 6], ['6.8.0', 4], ['5.44.2', 5], ['5.10.0', 3], ['4.85.0', 3], ['3.90.1', 1],
    ]),
  },
  {
    weight: fixed(5),
    variants: pub('kubernetes', 'hashicorp/kubernetes', [
      ['2.35.1', 6], ['2.31.0', 4], ['2.24.0', 3], ['2.23.0', 2], ['1.13.4', 1],
    ]),
  },
  { weight: fixed(4), variants: pub('helm', 'hashicorp/helm', [['3.0.0', 2], ['2.17.0', 6], ['2.12.1', 4], ['2.9.0', 2]]) },
  {
    weight: fixed(8),
    variants: pub('random', 'hashicorp/random', [['3.6.3', 8], ['3.6.0', 4], ['3.5.1', 3], ['3.4.3', 2], ['2.3.1', 1]]),
  },
  { weight: fixed(6), variants: pub('null', 'hashicorp/null', [['3.2.3', 6], ['3.2.2', 4], ['3.1.1', 2], ['2.1.2', 1]]) },
  { weight: fixed(4), variants: pub('tls', 'hashicorp/tls', [['4.0.6', 6], ['4.0.5', 3], ['3.4.0', 2]]) },
  {
    weight: fixed(3),
    variants: pub('datadog', 'DataDog/datadog', [['3.50.0', 4], ['3.46.0', 3], ['3.39.0', 2], ['2.26.1', 1]]),
  },
  {
    weight: fixed(3),
    variants: [
      ...pub('github', 'integrations/github', [['6.4.0', 5], ['6.2.3', 3], ['5.45.0', 3], ['4.31.0', 1]]).map(
        ([v]): [Variant, number] => [v, 9],
      ),
      ...pub('github', 'hashicorp/github', [['4.31.0', 2], ['3.1.0', 1]]),
    ],
  },
  {
    weight: fixed(2.5),
    variants: pub('cloudflare', 'cloudflare/cloudflare', [['5.0.0', 2], ['4.48.0', 5], ['4.20.0', 3], ['3.35.0', 2]]),
  },
  { weight: fixed(2.5), variants: pub('vault', 'hashicorp/vault', [['4.5.0', 5], ['3.25.0', 3], ['3.12.0', 2], ['2.24.1', 1]]) },
  { weight: fixed(4), variants: pub('time', 'hashicorp/time', [['0.12.1', 6], ['0.11.1', 3], ['0.9.1', 2]]) },
  { weight: fixed(4), variants: pub('local', 'hashicorp/local', [['2.5.2', 6], ['2.4.1', 3], ['2.1.0', 1]]) },
  { weight: fixed(3), variants: pub('archive', 'hashicorp/archive', [['2.7.0', 6], ['2.4.2', 3], ['2.2.0', 1]]) },
  { weight: fixed(0.5), variants: pub('template', 'hashicorp/template', [['2.2.0', 1]]) },
  {
    weight: privateOnly(3),
    variants: [
      [
        {
          name: 'internal',
          source: (o) => `app.terraform.io/${o.name}/internal`,
          versions: [['1.2.0', 5], ['1.0.0', 3], ['0.3.1', 1]],
          registryType: 'private',
        },
        1,
      ],
    ],
  },
];

const cloudSuffix = (o: OrgInfo) => (o.cloud === 'azure' ? 'azurerm' : o.cloud === 'google' ? 'google' : 'aws');
const mod = (weight: (o: OrgInfo) => number, variant: Variant): Slot => ({ weight, variants: [[variant, 1]] });
const pubMod = (w: (o: OrgInfo) => number, name: string, path: string, versions: Array<[string, number]>) =>
  mod(w, { name, source: `registry.terraform.io/${path}`, versions, registryType: 'public' });
const privMod = (w: number, name: string, versions: Array<[string, number]>) =>
  mod(privateOnly(w), {
    name,
    source: (o) => `app.terraform.io/${o.name}/${name}/${cloudSuffix(o)}`,
    versions,
    registryType: 'private',
  });
const localMod = (w: number, name: string, source: string) =>
  mod(fixed(w), { name, source, versions: null, registryType: null });
const awsMod = cloudWeight('aws', 3, 0.1);
const azMod = cloudWeight('azure', 3, 0.05);
const gcpMod = cloudWeight('google', 3, 0.05);

const MODULE_SLOTS: Slot[] = [
  pubMod(awsMod, 'vpc', 'terraform-aws-modules/vpc/aws', [['5.16.0', 4], ['5.8.1', 3], ['5.5.1', 4], ['5.1.2', 2], ['3.19.0', 1]]),
  pubMod(awsMod, 'eks', 'terraform-aws-modules/eks/aws', [['20.31.6', 4], ['20.8.4', 3], ['19.21.0', 2], ['18.31.2', 1]]),
  pubMod(awsMod, 'rds', 'terraform-aws-modules/rds/aws', [['6.10.0', 4], ['6.3.1', 2], ['5.9.0', 1]]),
  pubMod(awsMod, 's3-bucket', 'terraform-aws-modules/s3-bucket/aws', [['4.2.2', 4], ['3.15.1', 2]]),
  pubMod(awsMod, 'iam', 'terraform-aws-modules/iam/aws', [['5.48.0', 3], ['5.30.0', 2]]),
  pubMod(awsMod, 'security-group', 'terraform-aws-modules/security-group/aws', [['5.2.0', 3], ['4.17.2', 2]]),
  pubMod(awsMod, 'lambda', 'terraform-aws-modules/lambda/aws', [['7.17.0', 3], ['6.5.0', 1]]),
  pubMod(fixed(1.5), 'label', 'cloudposse/label/null', [['0.25.0', 1]]),
  pubMod(azMod, 'aks', 'Azure/aks/azurerm', [['9.3.0', 3], ['7.5.0', 2]]),
  pubMod(azMod, 'network', 'Azure/network/azurerm', [['5.3.0', 1]]),
  pubMod(azMod, 'vnet', 'Azure/vnet/azurerm', [['4.1.0', 1]]),
  pubMod(gcpMod, 'network', 'terraform-google-modules/network/google', [['9.3.0', 3], ['7.5.0', 1]]),
  pubMod(gcpMod, 'kubernetes-engine', 'terraform-google-modules/kubernetes-engine/google', [['35.0.1', 3], ['30.3.0', 2]]),
  pubMod(gcpMod, 'project-factory', 'terraform-google-modules/project-factory/google', [['17.1.0', 2], ['14.5.0', 1]]),
  privMod(3, 'network', [['2.0.0', 2], ['1.4.0', 4], ['1.3.2', 2]]),
  privMod(2.5, 'service', [['1.0.0', 3], ['0.9.1', 2]]),
  privMod(2, 'baseline', [['3.2.1', 1]]),
  localMod(3, 'app', './modules/app'),
  localMod(2, 'network', './modules/network'),
  localMod(1.5, 'monitoring', './modules/monitoring'),
  localMod(1, 'dns', '../common/dns'),
  mod(fixed(0.8), {
    name: 'network',
    source: (o) => `git::https://github.com/${o.vcsOwner}/terraform-modules.git//network?ref=v1.2.0`,
    versions: null,
    registryType: null,
  }),
];

/** Per slot, every (variant, version) combination with its probability; shared by all organizations. */
interface SlotCombos {
  pick: Weighted<number>;
  combos: Array<{ variant: Variant; version: string | null }>;
}

function slotCombos(slot: Slot): SlotCombos {
  const pairs: Array<[number, number]> = [];
  const combos: SlotCombos['combos'] = [];
  const vTotal = slot.variants.reduce((s, [, w]) => s + w, 0);
  for (const [variant, vw] of slot.variants) {
    const versions = variant.versions ?? [[null, 1] as const];
    const total = versions.reduce((s, [, w]) => s + w, 0);
    for (const [version, w] of versions) {
      pairs.push([combos.length, ((vw / vTotal) * w) / total]);
      combos.push({ variant, version });
    }
  }
  return { pick: new Weighted(pairs), combos };
}

const PROVIDER_COMBOS = PROVIDER_SLOTS.map(slotCombos);
const MODULE_COMBOS = MODULE_SLOTS.map(slotCombos);

/** Line tails (after the workspace id) of one organization, per slot and combination. */
interface OrgRows {
  weights: Float64Array;
  /** Per slot and combination: the name and source (the provider a resource names, the module it is declared in). */
  used: UsedProvider[][];
  lines: string[][];
  /** The same rows without `registry_type` (public rows only; otherwise equal to `lines`). */
  linesNoType: string[][];
}

function orgRows(slots: Slot[], combos: SlotCombos[], o: OrgInfo): OrgRows {
  const weights = new Float64Array(slots.length);
  const lines: string[][] = [];
  const linesNoType: string[][] = [];
  const used: UsedProvider[][] = [];
  slots.forEach((slot, s) => {
    weights[s] = slot.weight(o);
    const l: string[] = [];
    const n: string[] = [];
    const u: UsedProvider[] = [];
    // An organization with its own registry curates its private entries and a few public ones.
    const curatedPublic = o.privateRegistry && (s + o.name.length) % 3 === 0;
    for (const { variant, version } of combos[s]!.combos) {
      const source = typeof variant.source === 'string' ? variant.source : variant.source(o);
      const curated = variant.registryType === 'private' || (variant.registryType === 'public' && curatedPublic) ? ',"curated":true' : '';
      const head = `","name":${JSON.stringify(variant.name)},"source":${JSON.stringify(source)}` +
        (version === null ? '' : `,"version":${JSON.stringify(version)}`);
      const typed = variant.registryType === null ? `${head}}\n` : `${head},"registry_type":"${variant.registryType}"${curated}}\n`;
      l.push(typed);
      n.push(variant.registryType === 'public' ? `${head}}\n` : typed);
      u.push({ name: variant.name, source });
    }
    lines.push(l);
    linesNoType.push(n);
    used.push(u);
  });
  return { weights, used, lines, linesNoType };
}

// ---------------------------------------------------------------------------------------------------------
// Tags

const OTHER_TAG_NAMES = [
  'pci', 'sox', 'critical', 'managed-by:terraform', 'cost-center:1234', 'cost-center:4410',
  'cost-center:7781', 'tier:1', 'tier:2', 'owner:platform', 'Env:Prod', 'data-classification:confidential',
  'legacy "v1", do-not-touch', 'région:eu',
];
const OTHER_TAGS = OTHER_TAG_NAMES.map((t) => JSON.stringify(t));
const OTHER_TAGS_ASCII = OTHER_TAG_NAMES.map((t) => /^[\x00-\x7f]*$/.test(t));

// ---------------------------------------------------------------------------------------------------------
// Output

class Out {
  buf = '';
  lines = 0;
  /** False once a line that may hold non-ASCII text was added to `buf`. ASCII-only chunks are encoded as
   * latin1, which gives the same bytes as UTF-8 and is much faster. */
  ascii = true;
  private error: Error | null = null;

  /** `stream` is what lines are written to; `file`, the file it ends in (the same stream unless gzipped). */
  constructor(readonly stream: Writable, private readonly file: WriteStream = stream as WriteStream) {
    for (const s of new Set<Writable>([stream, file])) {
      s.on('error', (e: Error) => {
        this.error = e;
      });
    }
  }

  static open(path: string, gzip: boolean): Out {
    if (!gzip) return new Out(createWriteStream(path));
    const file = createWriteStream(`${path}.gz`);
    const zip = createGzip({ level: 1 });
    zip.pipe(file);
    return new Out(zip, file);
  }

  destroy(): void {
    this.stream.destroy();
    this.file.destroy();
  }

  /** Adds ASCII text holding `lines` lines. */
  add(text: string, lines = 1): void {
    this.buf += text;
    this.lines += lines;
  }

  /** Adds a line that may contain non-ASCII characters. */
  addText(line: string): void {
    this.buf += line;
    this.lines++;
    this.ascii = false;
  }

  async flush(): Promise<void> {
    if (this.error) throw this.error;
    if (this.buf.length === 0) return;
    const ok = this.stream.write(this.buf, this.ascii ? 'latin1' : 'utf8');
    this.buf = '';
    this.ascii = true;
    if (!ok) await once(this.stream, 'drain');
  }

  async close(): Promise<number> {
    await this.flush();
    const closed = this.file === this.stream ? null : once(this.file, 'close');
    closed?.catch(() => {}); // awaited below; an error before then is thrown there
    await new Promise<void>((resolve, reject) => {
      this.stream.end((e?: Error | null) => (e ? reject(e) : resolve()));
    });
    await closed;
    if (this.error) throw this.error;
    return this.file.bytesWritten;
  }
}

// ---------------------------------------------------------------------------------------------------------
// Generator

const T_START = Date.UTC(2021, 0, 1);
const T_CREATED_END = Date.UTC(2026, 8, 30);
const T_END = Date.UTC(2026, 10, 1);

const DAY_MS = 86_400_000;
const PAD2 = Array.from({ length: 100 }, (_, i) => String(i).padStart(2, '0'));
const PAD3 = Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, '0'));
/** `YYYY-MM-DDT` for each day from T_START to T_END (Date#toISOString is the generator's hot spot). */
const DAY_PREFIX = Array.from({ length: Math.ceil((T_END - T_START) / DAY_MS) + 1 }, (_, d) =>
  new Date(T_START + d * DAY_MS).toISOString().slice(0, 11),
);

/** Same as `new Date(ms).toISOString()` for T_START <= ms <= T_END. */
export function isoTime(ms: number): string {
  const off = ms - T_START;
  const day = Math.floor(off / DAY_MS);
  let rem = off - day * DAY_MS;
  const h = Math.floor(rem / 3_600_000);
  rem -= h * 3_600_000;
  const m = Math.floor(rem / 60_000);
  rem -= m * 60_000;
  const s = Math.floor(rem / 1000);
  return `${DAY_PREFIX[day]}${PAD2[h]}:${PAD2[m]}:${PAD2[s]}.${PAD3[rem - s * 1000]}Z`;
}

const PROVIDER_COUNT = binomial(10, 0.53);
const MODULE_COUNT = binomial(8, 0.4);
const SLUG = /^[a-z0-9-]+$/;

function checkOption(name: string, v: unknown, min: number): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) {
    throw new RangeError(`sample option ${name} must be an integer >= ${min}, got ${String(v)}`);
  }
  return v;
}

/** The seed's PRNG, after drawing the keys that scramble id counters (the generator's first draws). */
function idKeys(seed: number): { rng: Rng; wsKey: number; prjKey: number; runKey: number } {
  const rng = new Rng(seed);
  return { rng, wsKey: rng.u32(), prjKey: rng.u32(), runKey: rng.u32() };
}

/**
 * The first six characters of the id of a seed's `counter`-th workspace or run (the sample numbers both
 * from 0 to workspaces − 1). Distinct counters give distinct heads, so ids minted with counters the sample
 * did not use (sample-series.ts) can never equal one of its ids.
 */
export function sampleIdHeads(seed: number): { workspace: (counter: number) => string; run: (counter: number) => string } {
  const { wsKey, runKey } = idKeys(seed);
  return { workspace: (counter) => idHead(counter, wsKey), run: (counter) => idHead(counter, runKey) };
}

/** No timestamp of a sample is later than this: the moment its estate is seen (sample-series.ts moves on from here). */
export const SAMPLE_AS_OF_MS = T_END;

export async function writeSample(dir: string, opts: SampleOptions): Promise<SampleSummary> {
  const totalWs = checkOption('workspaces', opts.workspaces, 1);
  if (totalWs >= 2 ** 32) throw new RangeError('sample option workspaces must be below 2^32');
  const nOrg = Math.min(checkOption('organizations', opts.organizations, 1), totalWs);
  if (typeof opts.seed !== 'number' || !Number.isFinite(opts.seed)) {
    throw new RangeError(`sample option seed must be a finite number, got ${String(opts.seed)}`);
  }
  // Every step below draws from these in a fixed order: a seed's sample is the same file for file.
  const { rng, wsKey, prjKey, runKey } = idKeys(opts.seed);
  // Drawn from a stream of their own, so that adding them left every earlier part of a seed's sample as it was.
  const later = new Rng(opts.seed ^ 0x51ed270b);
  const orgKey = later.u32();

  const sizes = organizationSizes(nOrg, totalWs);
  const orgNames = organizationNames(nOrg, rng);

  await mkdir(dir, { recursive: true });
  const outs = {} as Record<SampleFile, Out>;
  for (const f of SAMPLE_FILES) outs[f] = Out.open(join(dir, `${f}.ndjson`), opts.gzip === true);

  try {
    const orgs = writeOrganizations(outs, orgNames, rng, later, orgKey);
    const projects = writeProjects(outs, orgs, sizes, rng, prjKey);
    writeTeams(outs, orgs, sizes, rng);
    for (const f of ['organizations', 'projects', 'teams', 'team_members'] as const) await outs[f].flush();
    const written = new Workspaces(outs, rng, later, wsKey, runKey, opts.resources !== false);
    for (let oi = 0; oi < orgs.length; oi++) {
      await written.organization(orgs[oi]!, sizes[oi]!, projects[oi]!, () => opts.onProgress?.(written.count, totalWs));
    }

    const counts = {} as Record<SampleFile, number>;
    const bytes = {} as Record<SampleFile, number>;
    for (const f of SAMPLE_FILES) {
      counts[f] = outs[f].lines;
      bytes[f] = await outs[f].close();
    }
    if (opts.onProgress && written.reported !== written.count) opts.onProgress(written.count, totalWs);

    const organizations = orgs
      .map((o, i) => ({ name: o.name, workspaces: sizes[i]!, i }))
      .sort((a, b) => b.workspaces - a.workspaces || a.i - b.i)
      .map(({ name, workspaces }) => ({ name, workspaces }));
    return { dir, seed: opts.seed, counts, bytes, organizations, largestOrganization: organizations[0]!.name };
  } catch (e) {
    for (const f of SAMPLE_FILES) outs[f].destroy();
    throw e;
  }
}

/** The organizations, with the traits the rest of the sample is drawn from. */
function writeOrganizations(outs: Record<SampleFile, Out>, names: string[], rng: Rng, later: Rng, orgKey: number): OrgInfo[] {
  let orgCounter = 0;
  const orgs = names.map((name) => {
    const r = rng.float();
    const cloud: Cloud = r < 0.6 ? 'aws' : r < 0.8 ? 'azure' : r < 0.95 ? 'google' : 'multi';
    const vcsOwner = rng.chance(0.15)
      ? name.split(/[-_]/).map((p) => p.charAt(0).toUpperCase() + p.slice(1)).join('')
      : name;
    const info: OrgInfo = { name, cloud, privateRegistry: rng.chance(0.4), vcsOwner };
    // Most organizations carry their external id; a few (older exports) do not.
    const id = later.chance(0.9) ? `,"id":"org-${id16(orgCounter++, orgKey, later)}"` : '';
    outs.organizations.add(`{"name":"${name}"${id}}\n`);
    return info;
  });
  if (orgs[0]) orgs[0].privateRegistry = true;
  return orgs;
}

/** Each organization's projects: its ids, and the slug a workspace name may start with. */
interface Projects { ids: string[]; slugs: Array<string | null> }

function writeProjects(outs: Record<SampleFile, Out>, orgs: OrgInfo[], sizes: number[], rng: Rng, prjKey: number): Projects[] {
  let prjCounter = 0;
  return orgs.map((o, i) => {
    const count = Math.min(200, 1 + Math.floor(sizes[i]! / 200));
    const pool = rng.shuffle([...PROJECT_NAMES]);
    const ids: string[] = [];
    const slugs: Array<string | null> = [];
    for (let p = 0; p < count; p++) {
      let name: string;
      if (p === 0) name = 'Default Project';
      else {
        const k = p - 1;
        const base = pool[k % pool.length]!;
        name = k < pool.length ? base : `${base}-${Math.floor(k / pool.length) + 1}`;
      }
      const id = `prj-${id16(prjCounter++, prjKey, rng)}`;
      ids.push(id);
      slugs.push(p > 0 && SLUG.test(name) ? name.replace(/-\d+$/, '') : null);
      outs.projects.addText(`{"id":"${id}","organization":"${o.name}","name":${JSON.stringify(name)}}\n`);
    }
    return { ids, slugs };
  });
}

/**
 * Teams and members. Fixed memberships, the same for every seed (these users are in no other team):
 * alice owns acme-corp and globex and is in initech's developers (no explorer access there);
 * bob.smith is in acme-corp's platform (read_workspaces), globex's developers and initech's security
 * (read_projects); carol is only in acme-corp's developers (no access anywhere); dave is in
 * acme-corp's security. Everyone else is drawn from a pool, so many users are in several organizations.
 */
function writeTeams(outs: Record<SampleFile, Out>, orgs: OrgInfo[], sizes: number[], rng: Rng): void {
  const fixedMembers: Record<number, Record<string, string[]>> = {
    0: { owners: ['alice'], platform: ['bob.smith'], developers: ['carol'], security: ['dave'] },
    1: { owners: ['alice'], developers: ['bob.smith'] },
    2: { developers: ['alice'], security: ['bob.smith'] },
  };
  const reserved = new Set(['alice', 'bob.smith', 'carol', 'dave']);
  const userPool = new Weighted<string>(
    [
      ...SERVICE_USERS.map((u): [string, number] => [u, 8]),
      ...FIRST_NAMES.map((u): [string, number] => [u, 3]),
      ...FIRST_NAMES.flatMap((f) =>
        LAST_NAMES.map((l): [string, number] => [(f.length + l.length) % 3 === 0 ? `${f}_${l}` : `${f}.${l}`, 1]),
      ),
    ].filter(([u]) => !reserved.has(u)),
  );
  orgs.forEach((o, i) => {
    const size = sizes[i]!;
    const teams = ['owners'];
    if (size >= 3) teams.push('developers');
    if (size >= 20) teams.push('platform');
    if (size >= 100) teams.push('security');
    if (size >= 1000) teams.push('sre');
    if (size >= 5000) teams.push('auditors');
    const fixedHere = fixedMembers[i] ?? {};
    for (const t of Object.keys(fixedHere)) if (!teams.includes(t)) teams.push(t);
    for (const team of teams) {
      let perms = '';
      if (team === 'platform' || team === 'auditors') perms = ',"read_workspaces":true';
      else if (team === 'security') perms = ',"read_workspaces":false,"read_projects":true';
      else if (team === 'sre') perms = ',"read_workspaces":true,"read_projects":true';
      else if (team === 'developers' && rng.chance(0.5)) perms = ',"read_workspaces":false,"read_projects":false';
      outs.teams.add(`{"organization":"${o.name}","name":"${team}"${perms}}\n`);
      const members = new Set(fixedHere[team] ?? []);
      const want = team === 'owners' ? rng.range(1, 3) : rng.range(1, 5);
      for (let tries = 0; members.size < want && tries < 20; tries++) members.add(userPool.pick(rng));
      for (const user of members) {
        outs.team_members.add(`{"organization":"${o.name}","team":"${team}","user":"${user}"}\n`);
      }
    }
  });
}

/** What one organization's workspaces are drawn from. */
interface OrgContext {
  o: OrgInfo;
  orgPart: string;
  vcsPrefix: string;
  prov: OrgRows;
  mods: OrgRows;
  prj: Projects;
  regions: string[];
  names: Set<string>;
  nextSuffix: Map<string, number>;
}

/** A workspace's name, and what the rest of its record is drawn with. */
interface WorkspaceName { name: string; nameJson: string; svc: string; env: string; plain: boolean }

/**
 * The workspaces, with their providers, modules and resources, one organization at a time. Each workspace's
 * record is built by the steps of `workspace`, in the order they draw from the generator.
 */
class Workspaces {
  count = 0;
  reported = 0;
  private readonly provScratch = new Float64Array(PROVIDER_SLOTS.length);
  private readonly modScratch = new Float64Array(MODULE_SLOTS.length);

  constructor(private readonly outs: Record<SampleFile, Out>, private readonly rng: Rng, private readonly later: Rng,
    private readonly wsKey: number, private readonly runKey: number, private readonly resources: boolean) {}

  async organization(o: OrgInfo, size: number, prj: Projects, progress: () => void): Promise<void> {
    const ctx: OrgContext = {
      o,
      orgPart: `","organization":"${o.name}","project_id":"`,
      vcsPrefix: `,"vcs_repo_identifier":"${o.vcsOwner}/`,
      prov: orgRows(PROVIDER_SLOTS, PROVIDER_COMBOS, o),
      mods: orgRows(MODULE_SLOTS, MODULE_COMBOS, o),
      prj,
      regions: REGIONS[o.cloud]!,
      names: new Set<string>(),
      nextSuffix: new Map<string, number>(),
    };
    for (let w = 0; w < size; w++) {
      this.workspace(ctx);
      this.count++;
      for (const f of ['workspace_resources', 'workspaces', 'workspace_providers', 'workspace_modules'] as const) {
        if (this.outs[f].buf.length > CHUNK_CHARS) await this.outs[f].flush();
      }
      if (this.count - this.reported >= PROGRESS_EVERY) {
        this.reported = this.count;
        progress();
      }
    }
  }

  private workspace(ctx: OrgContext): void {
    const { rng, later } = this;
    const wsId = id16(this.count, this.wsKey, rng);
    // Project: the Default Project and the first few hold most workspaces.
    const nPrj = ctx.prj.ids.length;
    const pi = nPrj === 1 ? 0 : Math.floor(nPrj * rng.float() ** 1.8);
    const named = this.name(ctx, ctx.prj.slugs[pi]);
    const { svc, env, plain } = named;
    let ascii = plain; // special names may be non-ASCII
    const created = T_START + Math.floor((T_CREATED_END - T_START) * Math.sqrt(rng.float()));
    const updated = rng.chance(0.05) ? created : created + Math.floor((T_END - created) * rng.float());
    const updatedIso = isoTime(updated);
    let line = `{"id":"ws-${wsId}${ctx.orgPart}${ctx.prj.ids[pi]}","name":${named.nameJson},"created_at":"${isoTime(created)}","updated_at":"${updatedIso}"`;
    // Current run (drawn first: a workspace that never ran has no state and rarely providers).
    const hasRun = !rng.chance(0.1);
    const versions = this.engineVersions(hasRun);
    line += versions.line + this.vcsRepository(ctx, svc, plain);
    const tags = this.tags(svc, env);
    if (!tags.ascii) ascii = false;
    line += tags.line;
    const run = this.currentRun(hasRun, created, updated, updatedIso);
    line += run.line + this.checks() + this.drift();
    const rowHead = `{"workspace_id":"ws-${wsId}`;
    const usedProviders = this.providers(ctx, rowHead, hasRun);
    const usedModules = this.modules(ctx, rowHead, hasRun);
    if (this.resources) line += this.workspaceResources(wsId, hasRun, versions.sv, usedProviders, usedModules, run.id, created, updated, updatedIso);
    // A few workspaces of organizations with a private registry were created from one of its modules.
    if (ctx.o.privateRegistry && usedModules.length > 0 && later.chance(0.05)) {
      line += `,"source_module_id":"private/${ctx.o.name}/${usedModules[0]}/${cloudSuffix(ctx.o)}/1.${later.int(10)}.${later.int(10)}"`;
    }
    if (ascii) this.outs.workspaces.add(`${line}}\n`);
    else this.outs.workspaces.addText(`${line}}\n`);
  }

  /** A name unique in its organization: service, component, environment and region, now and then a special one. */
  private name(ctx: OrgContext, prjSlug: string | null | undefined): WorkspaceName {
    const { rng } = this;
    let svc: string;
    let env: string;
    let base: string;
    let plain = true;
    if (rng.chance(0.003)) {
      base = rng.pick(SPECIAL_NAMES);
      svc = 'legacy';
      env = 'prod';
      plain = false;
    } else {
      svc = prjSlug && rng.chance(0.5) ? prjSlug : rng.pick(SERVICES);
      const comp = COMPONENTS.pick(rng);
      env = ENVS.pick(rng);
      base = comp ? `${svc}-${comp}-${env}` : `${svc}-${env}`;
      if (rng.chance(0.15)) base += `-${rng.pick(ctx.regions)}`;
      if (rng.chance(0.004)) {
        base = rng.chance(0.5) ? base.toUpperCase() : base.charAt(0).toUpperCase() + base.slice(1);
      }
    }
    let name = base;
    if (ctx.names.has(name)) {
      let n = ctx.nextSuffix.get(base) ?? 2;
      do {
        const suffix = `-${n++}`;
        name = (base.length + suffix.length > 255 ? base.slice(0, 255 - suffix.length) : base) + suffix;
      } while (ctx.names.has(name));
      ctx.nextSuffix.set(base, n);
    }
    ctx.names.add(name);
    return { name, nameJson: plain ? `"${name}"` : JSON.stringify(name), svc, env, plain };
  }

  /** The engine version asked for, and the one that wrote the state (`sv`), mostly the same or a release before. */
  private engineVersions(hasRun: boolean): { line: string; sv: string | null } {
    const { rng } = this;
    let line = '';
    const ev = rng.chance(0.03) ? null : ENGINE_VERSIONS.pick(rng);
    if (ev !== null) line += `,"engine_version":"${ev}"`;
    else if (rng.chance(0.3)) line += ',"engine_version":null';
    let sv: string | null = null;
    if (hasRun || rng.chance(0.3)) {
      const ri = ev === null ? undefined : RELEASE_INDEX.get(ev);
      if (ri === undefined) sv = rng.chance(0.8) ? RELEASES[RELEASES.length - 1 - rng.int(8)]! : null;
      else {
        const r = rng.float();
        sv = r < 0.75 ? ev : RELEASES[Math.max(0, ri - (r < 0.93 ? 1 : 2))]!;
      }
    }
    if (sv !== null) line += `,"state_version_engine_version":"${sv}"`;
    return { line, sv };
  }

  private vcsRepository(ctx: OrgContext, svc: string, plain: boolean): string {
    const { rng } = this;
    const vr = rng.float();
    if (vr < 0.8) {
      const rr = rng.float();
      const repo = !plain ? 'legacy-infra'
        : rr < 0.4 ? `${svc}-${rng.chance(0.5) ? 'infra' : 'api'}`
        : rr < 0.7 ? `terraform-${svc}`
        : rr < 0.9 ? 'infrastructure'
        : svc;
      return `${ctx.vcsPrefix}${repo}"`;
    }
    if (vr < 0.81) return ',"vcs_repo_identifier":""';
    if (vr < 0.83) return ',"vcs_repo_identifier":null';
    return '';
  }

  /** Tags: none, an empty list, or one to four (environment, team, others), now and then one twice. */
  private tags(svc: string, env: string): { line: string; ascii: boolean } {
    const { rng } = this;
    const tr = rng.float();
    if (tr < 0.05) return { line: ',"tags":[]', ascii: true };
    if (tr < 0.3) return { line: '', ascii: true };
    let ascii = true;
    const k = rng.range(1, 4);
    let tags = rng.chance(0.7) ? `"env:${env}"` : '';
    let last = tags;
    let n = tags ? 1 : 0;
    if (n < k && rng.chance(0.5)) {
      last = `"team:${svc}"`;
      tags += (n ? ',' : '') + last;
      n++;
    }
    for (let used = 0; n < k; n++) {
      let t = rng.int(OTHER_TAGS.length);
      while (used & (1 << t)) t = (t + 1) % OTHER_TAGS.length;
      used |= 1 << t;
      last = OTHER_TAGS[t]!;
      if (!OTHER_TAGS_ASCII[t]) ascii = false;
      tags += (n ? ',' : '') + last;
    }
    if (rng.chance(0.03)) tags += `,${last}`;
    return { line: `,"tags":[${tags}]`, ascii };
  }

  private currentRun(hasRun: boolean, created: number, updated: number, updatedIso: string): { line: string; id: string | null } {
    if (!hasRun) return { line: '', id: null };
    const { rng } = this;
    const id = id16(this.count, this.runKey, rng);
    if (rng.chance(0.8)) {
      const appliedAt = rng.chance(0.7) ? updatedIso : isoTime(created + Math.floor((updated - created) * rng.float()));
      return { line: `,"current_run":{"id":"run-${id}","status":"applied","applied_at":"${appliedAt}"}`, id };
    }
    return { line: `,"current_run":{"id":"run-${id}","status":"planned_and_finished"}`, id };
  }

  private checks(): string {
    const { rng } = this;
    if (!rng.chance(0.65)) return '';
    let checks = `"passed":${rng.int(21)}`;
    const failed = rng.chance(0.08) ? rng.range(1, 3) : 0;
    const errored = rng.chance(0.03) ? rng.range(1, 2) : 0;
    const unknown = rng.chance(0.04) ? rng.range(1, 5) : 0;
    const explicitZero = rng.chance(0.2);
    if (failed || explicitZero) checks += `,"failed":${failed}`;
    if (errored || explicitZero) checks += `,"errored":${errored}`;
    if (unknown || explicitZero) checks += `,"unknown":${unknown}`;
    return `,"checks":{${checks}}`;
  }

  private drift(): string {
    const { rng } = this;
    if (!rng.chance(0.7)) return '';
    if (rng.chance(0.02)) return ',"drift":{"drifted":false}';
    const drifted = rng.chance(0.12);
    const undrifted = rng.range(1, 300);
    return `,"drift":{"drifted":${drifted},"resources_drifted":${drifted ? rng.range(1, 10) : 0},"resources_undrifted":${undrifted}}`;
  }

  /** Draws up to `k` distinct slots by their weights, without replacement, handing each to `each` as it is drawn. */
  private drawSlots(scratch: Float64Array, weights: ArrayLike<number>, k: number, each: (slot: number) => void): void {
    let total = 0;
    for (let s = 0; s < scratch.length; s++) total += scratch[s] = weights[s]!;
    for (; k > 0 && total > 1e-9; k--) {
      const s = takeSlot(scratch, total, this.rng);
      if (s < 0) break;
      total -= scratch[s]!;
      scratch[s] = 0;
      each(s);
    }
  }

  /** Providers: distinct slots (so distinct sources), weighted, without replacement. */
  private providers(ctx: OrgContext, rowHead: string, hasRun: boolean): UsedProvider[] {
    const { rng, provScratch } = this;
    const used: UsedProvider[] = [];
    const k = !hasRun && rng.chance(0.7) ? 0 : PROVIDER_COUNT.pick(rng);
    if (k === 0) return used;
    this.drawSlots(provScratch, ctx.prov.weights, k, (s) => {
      const c = PROVIDER_COMBOS[s]!.pick.index(rng);
      used.push(ctx.prov.used[s]![c]!);
      this.outs.workspace_providers.add(rowHead + (rng.chance(0.01) ? ctx.prov.linesNoType[s]![c]! : ctx.prov.lines[s]![c]!));
    });
    return used;
  }

  /** Modules: mostly distinct; now and then the same row twice, or one source at two versions. */
  private modules(ctx: OrgContext, rowHead: string, hasRun: boolean): string[] {
    const { rng, modScratch } = this;
    const used: string[] = [];
    const k = !hasRun && rng.chance(0.7) ? 0 : MODULE_COUNT.pick(rng);
    if (k === 0) return used;
    const out = this.outs.workspace_modules;
    this.drawSlots(modScratch, ctx.mods.weights, k, (s) => {
      const combos = MODULE_COMBOS[s]!;
      const c = combos.pick.index(rng);
      const row = rowHead + (rng.chance(0.01) ? ctx.mods.linesNoType[s]![c]! : ctx.mods.lines[s]![c]!);
      used.push(ctx.mods.used[s]![c]!.name);
      out.add(row);
      const extra = rng.float();
      if (extra < 0.01) out.add(row);
      else if (extra < 0.015 && combos.combos.length > 1) out.add(rowHead + ctx.mods.lines[s]![(c + 1) % combos.combos.length]!);
    });
    return used;
  }

  /**
   * Resources: a workspace that ran has state; one that never ran sometimes has state from local execution
   * (no run id on its resources). Returns the workspace's counts of them.
   */
  private workspaceResources(wsId: string, hasRun: boolean, sv: string | null, usedProviders: UsedProvider[], usedModules: string[],
    runId: string | null, created: number, updated: number, updatedIso: string): string {
    const { later } = this;
    const hasState = hasRun || later.chance(0.3);
    const nRes = resourceCount(later, hasState);
    if (nRes > 0) {
      const ri = sv === null ? undefined : RELEASE_INDEX.get(sv);
      const versions = sv === null ? [] : ri === undefined ? [sv] : [sv, ...RELEASES.slice(Math.max(0, ri - 2), ri)];
      const olderIso = () => isoTime(created + Math.floor((updated - created) * later.float()));
      const res = writeResources(later, wsId, nRes, usedProviders, usedModules, runId, versions, updatedIso, olderIso);
      this.outs.workspace_resources.add(res.lines, res.count);
      return `,"resource_count":${res.count},"current_rum_count":${res.billable}`;
    }
    return hasState || later.chance(0.5) ? ',"resource_count":0,"current_rum_count":0' : '';
  }
}

/** Index of a slot drawn by weight from `w` (whose positive entries sum to `total`). */
function takeSlot(w: Float64Array, total: number, rng: Rng): number {
  const x = rng.float() * total;
  let acc = 0;
  let last = -1;
  for (let s = 0; s < w.length; s++) {
    const ws = w[s]!;
    if (ws <= 0) continue;
    last = s;
    acc += ws;
    if (x < acc) return s;
  }
  return last; // rounding: the last slot still available
}
