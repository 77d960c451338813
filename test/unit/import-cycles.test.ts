// No circular imports in the service's compiled modules. A circle makes one of its modules run before the
// ones it imports have finished, so a constant read at load time can be undefined depending on which module
// the process happened to load first. The compiled JavaScript is read, not the TypeScript: type-only
// imports are gone there, and they load nothing. Static imports and re-exports are followed; a dynamic
// import() loads later and cannot see a half-initialised module, so it is not an edge.
import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const DIST = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const ROOT = join(DIST, 'src');
/** dist/ keeps the output of a source file that was deleted or renamed: only what has a source counts. */
const hasSource = (file: string) => existsSync(join(DIST, '..', relative(DIST, file)).replace(/\.js$/, '.ts'));

/** `import … from './x.js'`, `export … from './x.js'` and `import './x.js'`, each at the start of a line as tsc writes them. */
const STATIC_IMPORT = /^\s*(?:import|export)\b(?:[^'";]*?\bfrom)?\s*(['"])(\.{1,2}\/[^'"]+)\1/gm;

export function relativeImports(source: string): string[] {
  return [...source.matchAll(STATIC_IMPORT)].map((m) => m[2]!);
}

function jsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? jsFiles(join(dir, e.name)) : e.name.endsWith('.js') && hasSource(join(dir, e.name)) ? [join(dir, e.name)] : []);
}

/** Every module reachable from dist/src through relative static imports (into dist/workers too), and its imports. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const pending = jsFiles(ROOT);
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (graph.has(file)) continue;
    const targets = relativeImports(readFileSync(file, 'utf8'))
      .map((spec) => resolve(dirname(file), spec))
      .filter((target) => existsSync(target) && hasSource(target));
    graph.set(file, [...new Set(targets)]);
    pending.push(...targets);
  }
  return graph;
}

/** Strongly connected components of more than one module, or of one that imports itself (Tarjan). */
export function circles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(component);
    }
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return out;
}

/** One circle through a component's first module (in name order), as the path a reader can follow. */
export function oneCircle(graph: Map<string, string[]>, component: string[]): string[] {
  const members = new Set(component);
  const start = [...component].sort()[0]!;
  const from = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift()!;
    for (const w of graph.get(v) ?? []) {
      if (!members.has(w)) continue;
      if (w === start) {
        const path = [v];
        while (path[0] !== start) path.unshift(from.get(path[0]!)!);
        return [...path, start];
      }
      if (!from.has(w)) { from.set(w, v); queue.push(w); }
    }
  }
  return [start];
}

describe('import circles in dist/src', () => {
  it('reads the imports tsc writes: named, namespace, side-effect and re-exports, over several lines', () => {
    const source = [
      "import { a, b } from './a.js';",
      'import {\n  c,\n  d,\n} from "../c.js";',
      "import * as E from './e.js';",
      "import './side-effect.js';",
      "export { f } from './f.js';",
      "export * from './g.js';",
      "import { readFileSync } from 'node:fs';",
      "const later = await import('./lazy.js');",
      "const text = 'import nothing from here';",
    ].join('\n');
    expect(relativeImports(source)).to.deep.equal(['./a.js', '../c.js', './e.js', './side-effect.js', './f.js', './g.js']);
  });

  it('finds a circle and names its path', () => {
    const graph = new Map([['a', ['b']], ['b', ['c']], ['c', ['a', 'd']], ['d', []], ['e', ['e']]]);
    const found = circles(graph);
    expect(found.map((c) => [...c].sort())).to.deep.equal([['a', 'b', 'c'], ['e']]);
    expect(oneCircle(graph, found[0]!)).to.deep.equal(['a', 'b', 'c', 'a']);
  });

  it('has none', () => {
    const graph = importGraph();
    expect(graph.size, 'modules found').to.be.above(50);
    const name = (file: string) => relative(DIST, file);
    const found = circles(graph).map((component) =>
      `${component.length} modules: ${oneCircle(graph, component).map(name).join(' → ')}` +
      (component.length > oneCircle(graph, component).length - 1 ? ` (also ${component.filter((f) => !oneCircle(graph, component).includes(f)).map(name).join(', ')})` : ''));
    expect(found, `import circles:\n${found.join('\n')}`).to.deep.equal([]);
  });
});
