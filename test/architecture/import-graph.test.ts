/**
 * The import graph of src/ (issue #20: no import circles, layers that only point down). A cycle
 * means neither module can be understood, tested or loaded without the other, and an import from a
 * lower layer into a higher one is how cycles start. Type-only imports count: they are dependencies
 * for whoever reads the code, even if they vanish from the emitted JavaScript.
 *
 * Layers, lowest first: src/core (record types, stage errors), src/serdes and src/state, src/dsl,
 * src/graph (compiles the DSL), src/runtime (runs what graph compiled). Imports point down only.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

/**
 * Every module specifier in a file, in any syntax that makes a dependency. Parsed rather than matched
 * with a regular expression so that commented-out imports and strings that look like imports do not
 * count, and `export * as ns from` does (TypeScript's own preProcessFile misses it).
 */
function moduleSpecifiers(fileName: string, text: string): string[] {
  const out: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      out.push(node.moduleSpecifier.text);
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference) && ts.isStringLiteral(node.moduleReference.expression)) {
      out.push(node.moduleReference.expression.text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const arg = node.arguments[0];
      if (arg && ts.isStringLiteralLike(arg)) out.push(arg.text);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      out.push(node.argument.literal.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS));
  return out;
}

interface ImportGraph {
  /** Keyed by path relative to src/ with `/` separators, e.g. `graph/compiled.ts`. */
  readonly edges: ReadonlyMap<string, ReadonlySet<string>>;
  /** Relative specifiers that name no file: a walker that cannot follow them would miss edges. */
  readonly unresolved: readonly string[];
}

const isFile = (p: string): boolean => {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
};

function tsFilesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return tsFilesUnder(p);
    return /\.(ts|mts|tsx)$/.test(e.name) && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

/** How NodeNext and tsx find a relative specifier: as written, `.js` meaning `.ts`, no extension, or a folder's index. */
function resolveSpecifier(from: string, specifier: string): string | undefined {
  const base = resolve(dirname(from), specifier);
  return [base, base.replace(/\.js$/, '.ts'), `${base}.ts`, join(base, 'index.ts')].find(isFile);
}

function readImportGraph(root: string): ImportGraph {
  const files = tsFilesUnder(root);
  const key = (p: string): string => relative(root, p).split(sep).join('/');
  const known = new Set(files.map(key));
  const edges = new Map<string, Set<string>>();
  const unresolved: string[] = [];
  for (const file of files) {
    const targets = new Set<string>();
    for (const specifier of moduleSpecifiers(file, readFileSync(file, 'utf8'))) {
      // Packages and node: built-ins are outside the graph.
      if (!specifier.startsWith('.')) continue;
      const target = resolveSpecifier(file, specifier);
      if (target === undefined) unresolved.push(`${key(file)}: ${specifier}`);
      else if (known.has(key(target))) targets.add(key(target));
    }
    edges.set(key(file), targets);
  }
  return { edges, unresolved };
}

/**
 * One loop per strongly connected component (Tarjan), as `a -> b -> a`, shortest from the
 * component's first file in sort order, so that the message names a path one can follow; files of
 * the component off that loop are named after it, since they are in other loops of the same knot.
 */
function findCycles(edges: ReadonlyMap<string, ReadonlySet<string>>): string[] {
  const next = (v: string): ReadonlySet<string> => edges.get(v) ?? new Set<string>();
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter);
    counter++;
    stack.push(v);
    onStack.add(v);
    for (const w of next(v)) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || next(v).has(v)) components.push(component.sort());
  };
  for (const v of [...edges.keys()].sort()) if (!index.has(v)) visit(v);

  return components
    .map((component) => {
      const members = new Set(component);
      const start = component[0]!;
      const cameFrom = new Map<string, string>();
      const queue = [start];
      for (let i = 0; i < queue.length && !cameFrom.has(start); i++) {
        const v = queue[i]!;
        for (const w of [...next(v)].sort()) {
          if (!members.has(w) || cameFrom.has(w)) continue;
          cameFrom.set(w, v);
          queue.push(w);
        }
      }
      const path = [start];
      for (let v = cameFrom.get(start)!; v !== start; v = cameFrom.get(v)!) path.unshift(v);
      const loop = [start, ...path];
      const alsoInIt = component.filter((f) => !loop.includes(f));
      return `${loop.join(' -> ')}${alsoInIt.length > 0 ? ` (tangled in the same knot: ${alsoInIt.join(', ')})` : ''}`;
    })
    .sort();
}

const graph = readImportGraph(SRC);
const edgeList = [...graph.edges].flatMap(([from, targets]) => [...targets].map((to) => ({ from, to })));
const under = (file: string, layer: string): boolean => file.startsWith(`${layer}/`);

test('the walker sees every kind of import and follows every relative one in src/', () => {
  const text = [
    "import { a } from './a.ts';",
    "import type { B } from './b.ts';",
    "import './side-effect.ts';",
    "export { c } from './c.ts';",
    "export type * from './d.ts';",
    "export * as e from './e.ts';",
    "const f = await import('./f.ts');",
    "type G = typeof import('./g.ts');",
    "// import { h } from './commented-out.ts';",
    "const i = \"import { i } from './in-a-string.ts'\";",
  ].join('\n');
  assert.deepEqual(moduleSpecifiers('sample.ts', text), ['./a.ts', './b.ts', './side-effect.ts', './c.ts', './d.ts', './e.ts', './f.ts', './g.ts']);
  assert.deepEqual(graph.unresolved, []);
  assert.ok(edgeList.length > 0, 'no import edges found under src/: the walker is broken, and every check below would pass vacuously');
});

test('the cycle finder reports loops and self-imports, and nothing in a tree', () => {
  const g = (pairs: readonly (readonly [string, string])[]): Map<string, Set<string>> => {
    const m = new Map<string, Set<string>>();
    for (const [from, to] of pairs) {
      if (!m.has(from)) m.set(from, new Set());
      if (!m.has(to)) m.set(to, new Set());
      m.get(from)!.add(to);
    }
    return m;
  };
  assert.deepEqual(findCycles(g([['a', 'b'], ['b', 'c'], ['a', 'c']])), []);
  assert.deepEqual(findCycles(g([['a', 'b'], ['b', 'c'], ['c', 'a'], ['c', 'd']])), ['a -> b -> c -> a']);
  assert.deepEqual(findCycles(g([['x', 'x'], ['p', 'q'], ['q', 'p']])), ['p -> q -> p', 'x -> x']);
});

test('src/ has no import cycles', () => {
  assert.deepEqual(findCycles(graph.edges), [], 'import cycles under src/ (break each by moving what both sides share into a module below them)');
});

const LAYER_RULES: readonly { readonly layer: string; readonly rule: string; readonly allows: (target: string) => boolean }[] = [
  {
    layer: 'graph',
    rule: 'src/graph compiles what src/runtime runs and must not import src/runtime (the runtime builds tasks from graph\'s TaskPlan)',
    allows: (t) => !under(t, 'runtime'),
  },
  {
    layer: 'state',
    rule: 'src/state is below the engine and must not import src/runtime, src/graph or src/dsl (shared types belong in src/core)',
    allows: (t) => !['runtime', 'graph', 'dsl'].some((l) => under(t, l)),
  },
  {
    layer: 'serdes',
    rule: 'src/serdes is below the engine and must not import src/runtime, src/graph or src/dsl (shared types belong in src/core)',
    allows: (t) => !['runtime', 'graph', 'dsl'].some((l) => under(t, l)),
  },
  {
    layer: 'core',
    rule: 'src/core is the bottom layer: it imports only itself and src/errors.ts',
    allows: (t) => under(t, 'core') || t === 'errors.ts',
  },
];

for (const { layer, rule, allows } of LAYER_RULES) {
  test(`layers point down: ${rule}`, () => {
    const files = [...graph.edges.keys()].filter((f) => under(f, layer));
    assert.ok(files.length > 0, `no files under src/${layer}: the rule checks nothing (was the folder renamed?)`);
    const upward = edgeList.filter((e) => under(e.from, layer) && !allows(e.to)).map((e) => `${e.from} -> ${e.to}`);
    assert.deepEqual(upward, [], rule);
  });
}

/**
 * src/runtime's rooms, highest first: a room imports only rooms after it, so a newcomer reads the
 * worker down to the stage base and a change in a lower room never needs a higher one.
 */
const RUNTIME_ROOMS: readonly (readonly string[])[] = [['worker'], ['loop'], ['offload'], ['standby'], ['transaction'], ['queries'], ['task'], ['global-tables'], ['nodes'], ['base']];

test('the rooms of src/runtime import only rooms below them (worker → loop → offload → standby → transaction → queries → task → global-tables → nodes → base)', () => {
  const rank = (file: string): number | undefined => {
    const room = /^runtime\/([^/]+)\//.exec(file)?.[1];
    if (room === undefined) return undefined;
    const at = RUNTIME_ROOMS.findIndex((rooms) => rooms.includes(room));
    assert.ok(at >= 0, `src/runtime/${room}/ is in no rank of RUNTIME_ROOMS: place it`);
    return at;
  };
  const files = [...graph.edges.keys()].filter((f) => under(f, 'runtime'));
  assert.ok(files.some((f) => f.startsWith('runtime/worker/')) && files.some((f) => f.startsWith('runtime/base/')), 'no runtime rooms found: the rule checks nothing');
  const loose = files.filter((f) => rank(f) === undefined);
  assert.deepEqual(loose, [], 'files directly under src/runtime belong in a room');
  const backwards = edgeList.filter((e) => under(e.from, 'runtime') && under(e.to, 'runtime') && rank(e.to)! < rank(e.from)!).map((e) => `${e.from} -> ${e.to}`);
  assert.deepEqual(backwards, [], 'an import from a lower runtime room into a higher one');
});
