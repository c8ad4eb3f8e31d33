/**
 * `onceflow run` and `describe` type-check the topology before loading it (issue #23): a lambda with
 * its parameters in the wrong order is a compile error naming file:line:column, not a pipeline that
 * silently drops every record. Spawned as a user runs it; `describe` needs no broker.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { projectRoot } from '../../src/kafka/paths.ts';
import { typecheckTopology } from '../../src/cli/typecheck.ts';

const root = projectRoot();
// Inside the repository, so that the files' relative imports of src/ and its tsconfig.json apply.
mkdirSync(join(root, 'test', 'tmp'), { recursive: true });
const dir = mkdtempSync(join(root, 'test', 'tmp', 'typecheck-'));
const cacheDir = join(dir, 'cache');
after(() => rmSync(dir, { recursive: true, force: true }));

const topology = (predicate: string): string => `import { TopologyBuilder, jsonSerde, stringSerde } from '../../../src/index.ts';
import { isPaid, type Order } from './orders.ts';

const app = new TopologyBuilder({ appId: 'shop' });
app
  .stream('orders', { key: stringSerde, value: jsonSerde<Order>() })
  .filter(${predicate})
  .to('paid', { key: stringSerde, value: jsonSerde<Order>() });
export default app;
`;
writeFileSync(join(dir, 'orders.ts'), `export interface Order { readonly status: string; readonly amount: number }\nexport const isPaid = (o: Order): boolean => o.status === 'PAID';\n`);
const wrong = join(dir, 'wrong.ts');
const right = join(dir, 'right.ts');
writeFileSync(wrong, topology('(o) => isPaid(o)'));
writeFileSync(right, topology('(_k, o) => isPaid(o)'));

function cli(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], { cwd: root, encoding: 'utf8', timeout: 120_000, env: { ...process.env, ONCEFLOW_CACHE: cacheDir } });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

test('a wrongly ordered lambda fails describe with the compiler error at file:line:column, and no stack trace', () => {
  const r = cli('describe', relative(root, wrong));
  assert.equal(r.status, 1, r.stderr);
  assert.equal(r.stdout, '');
  const where = `${relative(root, wrong)}:7:25`;
  assert.match(r.stderr, /^onceflow: error \[TOPOLOGY_TYPE_ERROR\]/);
  assert.ok(r.stderr.includes(`${where} - error TS2345`), r.stderr);
  assert.ok(r.stderr.includes('.filter((o) => isPaid(o))'), 'the offending line is shown');
  assert.doesNotMatch(r.stderr, /^\s+at /m);
});

test('run stops at the same error before it touches a broker', () => {
  // Port 1 has no broker: had the check not stopped it, the worker would fail later, differently.
  const r = cli('run', relative(root, wrong), '--bootstrap', '127.0.0.1:1', '--app-id', 'shop');
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, /\[TOPOLOGY_TYPE_ERROR\].*\n.*wrong\.ts:7:25 - error TS2345/);
});

test('--no-typecheck loads the file unchecked', () => {
  const r = cli('describe', '--no-typecheck', relative(root, wrong));
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^Topology: shop/);
});

test('a pass is cached: a second start reads the entry the first wrote and skips the compiler', async () => {
  const first = cli('describe', relative(root, right));
  assert.equal(first.status, 0, first.stderr);
  const hit = await typecheckTopology(right, { cacheDir });
  assert.equal(hit.outcome, 'cached');
  const entry = hit.cacheFile!;
  assert.ok(existsSync(entry.replace(/\.json$/, '.tsbuildinfo')), 'the check left its build info (tsc --incremental) for the one after an edit');
  const written = statSync(entry).mtimeMs;
  const second = cli('describe', relative(root, right));
  assert.equal(second.status, 0, second.stderr);
  assert.equal(second.stdout, first.stdout);
  assert.equal(statSync(entry).mtimeMs, written, 'a hit reads the entry; only a miss (re)writes it');
});

test('an edit to a file the topology imports invalidates the cached pass', async () => {
  const imported = join(dir, 'orders.ts');
  const original = readFileSync(imported, 'utf8');
  assert.equal((await typecheckTopology(right, { cacheDir })).outcome, 'cached');
  writeFileSync(imported, original.replace('(o: Order)', '(o: Order, strict: boolean)'));
  try {
    await assert.rejects(typecheckTopology(right, { cacheDir, cwd: root }), (e: { code?: string; message: string }) => e.code === 'TOPOLOGY_TYPE_ERROR' && /right\.ts:7:\d+ - error TS2554/.test(e.message));
  } finally {
    writeFileSync(imported, original);
  }
  assert.equal((await typecheckTopology(right, { cacheDir })).outcome, 'cached', 'back to the contents that passed');
  // A new content that passes is checked again, from the build info the failed check left: it must pass.
  writeFileSync(imported, `${original}export const unused = 1;\n`);
  try {
    assert.equal((await typecheckTopology(right, { cacheDir })).outcome, 'checked');
  } finally {
    writeFileSync(imported, original);
  }
});

test('ONCEFLOW_CACHE moves the cache; ONCEFLOW_CACHE_DIR, its earlier name, still does when ONCEFLOW_CACHE is unset', async () => {
  const saved = { cache: process.env.ONCEFLOW_CACHE, alias: process.env.ONCEFLOW_CACHE_DIR };
  const [one, other] = [join(dir, 'env-cache'), join(dir, 'alias-cache')];
  try {
    delete process.env.ONCEFLOW_CACHE;
    process.env.ONCEFLOW_CACHE_DIR = other;
    assert.ok((await typecheckTopology(right)).cacheFile?.startsWith(join(other, 'typecheck')));
    process.env.ONCEFLOW_CACHE = one;
    assert.ok((await typecheckTopology(right)).cacheFile?.startsWith(join(one, 'typecheck')));
  } finally {
    for (const [name, value] of [['ONCEFLOW_CACHE', saved.cache], ['ONCEFLOW_CACHE_DIR', saved.alias]] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
});
