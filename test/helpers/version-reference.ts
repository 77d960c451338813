// A reference comparator for versions written from interface §5, apart from the code it checks
// (src/catalog/version-order.ts): numeric parts (a missing part is 0), then a pre-release before its
// release with SemVer 2.0 pre-release precedence, build metadata ignored.

export const VERSION = /^v?(\d+)(\.\d+)?(\.\d+)?(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/;

interface Parsed {
  core: [bigint, bigint, bigint];
  /** null for a release. */
  pre: string[] | null;
}

const parsed = new Map<string, Parsed | null>();
function parse(v: string): Parsed | null {
  let p = parsed.get(v);
  if (p === undefined) parsed.set(v, (p = parseUncached(v)));
  return p;
}

function parseUncached(v: string): Parsed | null {
  const m = VERSION.exec(v);
  if (!m) return null;
  const num = (p: string | undefined) => (p === undefined ? 0n : BigInt(p.replace(/^\./, '')));
  return { core: [num(m[1]), num(m[2]), num(m[3])], pre: m[4] === undefined ? null : m[4].slice(1).split('.') };
}

export const sign = (a: bigint | string, b: bigint | string) => (a < b ? -1 : a > b ? 1 : 0);

/** SemVer 2.0 §11.4 for one identifier. */
function compareIdentifier(a: string, b: string): number {
  const an = /^\d+$/.test(a);
  const bn = /^\d+$/.test(b);
  if (an && bn) return sign(BigInt(a), BigInt(b));
  if (an) return -1; // numeric < alphanumeric
  if (bn) return 1;
  // ASCII order: every identifier character is ASCII, so code-unit order is ASCII order.
  return sign(a, b);
}

/** Reference precedence: negative, zero (equal precedence) or positive. */
export function reference(a: string, b: string): number {
  const pa = parse(a)!;
  const pb = parse(b)!;
  for (let i = 0; i < 3; i++) {
    const c = sign(pa.core[i]!, pb.core[i]!);
    if (c !== 0) return c;
  }
  if (pa.pre === null && pb.pre === null) return 0;
  if (pa.pre === null) return 1; // release after its pre-releases
  if (pb.pre === null) return -1;
  const n = Math.min(pa.pre.length, pb.pre.length);
  for (let i = 0; i < n; i++) {
    const c = compareIdentifier(pa.pre[i]!, pb.pre[i]!);
    if (c !== 0) return c;
  }
  return sign(BigInt(pa.pre.length), BigInt(pb.pre.length)); // more identifiers > fewer
}
