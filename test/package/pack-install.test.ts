/**
 * The package as a user gets it: built, packed with `npm pack`, installed from the tarball into a
 * project of its own, then imported from plain `node`, type-checked by a strict `tsc` that also checks
 * onceflow's declarations, and run as the installed `onceflow` command. Nothing the checks run comes from src/.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { projectRoot } from '../../src/kafka/paths.ts';
import { ensureTopics, withAdmin } from '../../src/kafka/admin.ts';
import { produceRecords } from '../../src/kafka/produce-records.ts';
import { readTopic } from '../../src/kafka/read-topic.ts';

const root = projectRoot();
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name: string; version: string; dependencies: Record<string, string>; bin: Record<string, string> };

function run(cmd: string, args: readonly string[], cwd: string): string {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.error) throw r.error;
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')} (in ${cwd}) exited ${r.status}\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

interface PackResult {
  readonly filename: string;
  readonly size: number;
  readonly unpackedSize: number;
  readonly entryCount: number;
  readonly integrity: string;
  readonly files: readonly { readonly path: string }[];
}

interface LockEntry {
  readonly dev?: boolean;
  readonly [field: string]: unknown;
}

/**
 * The scratch project's lockfile: onceflow from the tarball plus the repository's own locked
 * production dependencies. With it `npm ci` installs the versions the suite ran against, from the npm
 * cache, without asking the registry to resolve a single range.
 */
function scratchLockfile(packed: PackResult): object {
  const repoLock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const deps = Object.entries(repoLock.packages).filter(([path, entry]) => path !== '' && entry.dev !== true);
  return {
    name: 'scratch',
    lockfileVersion: 3,
    requires: true,
    packages: {
      '': { name: 'scratch', dependencies: { [pkg.name]: `file:${packed.filename}` } },
      [`node_modules/${pkg.name}`]: { version: pkg.version, resolved: `file:${packed.filename}`, integrity: packed.integrity, dependencies: pkg.dependencies, bin: pkg.bin },
      ...Object.fromEntries(deps),
    },
  };
}

const topology = `import { TopologyBuilder, jsonSerde, stringSerde } from 'onceflow';

interface Order { readonly customer: string; readonly amount: number }

const app = new TopologyBuilder({ appId: 'scratch-shop' });
app
  .stream('orders', { key: stringSerde, value: jsonSerde<Order>() })
  .groupBy((_k, o) => o.customer, { key: stringSerde })
  .aggregate(() => 0, (_k, o, total) => total + o.amount, { state: jsonSerde<number>(), name: 'spent' })
  .toStream()
  .to('spent-by-customer', { key: stringSerde, value: jsonSerde<number>() });
export default app;
`;

const plainNode = `import { TopologyBuilder, compile, jsonSerde, stringSerde } from 'onceflow';
import { TopologyTestDriver } from 'onceflow/testing';
import { upsert } from 'onceflow/effects';

const app = new TopologyBuilder({ appId: 'shop' });
app
  .stream('orders', { key: stringSerde, value: jsonSerde() })
  .filter((_k, o) => o.status === 'PAID')
  .groupBy((_k, o) => o.customer, { key: stringSerde })
  .aggregate(() => 0, (_k, o, total) => total + o.amount, { state: jsonSerde(), name: 'paid' })
  .toStream()
  .to('totals', { key: stringSerde, value: jsonSerde() });

const driver = new TopologyTestDriver(app);
const orders = driver.input('orders');
orders.pipe('o1', { customer: 'c1', status: 'PAID', amount: 5 });
orders.pipe('o2', { customer: 'c1', status: 'OPEN', amount: 7 });
orders.pipe('o3', { customer: 'c1', status: 'PAID', amount: 2 });

let internals;
try {
  await import('onceflow/dist/src/runtime/task.js');
  internals = 'importable';
} catch (e) {
  internals = e.code;
}
console.log(JSON.stringify({
  topics: compile(app).topics.map((t) => t.name),
  totals: driver.output('totals').readKeyValues(),
  upsert: typeof upsert,
  internals,
}));
`;

const strictTs = `import { TopologyBuilder, compile, jsonSerde, stringSerde, type Serde } from 'onceflow';
import { TopologyTestDriver, type TestRecord } from 'onceflow/testing';
import { upsert, type UpsertSpec } from 'onceflow/effects';

interface Order { readonly customer: string; readonly status: 'PAID' | 'OPEN'; readonly amount: number }

const orderSerde: Serde<Order> = jsonSerde<Order>();
const app = new TopologyBuilder({ appId: 'shop' });
app
  .stream('orders', { key: stringSerde, value: orderSerde })
  .filter((_k, o) => o.status === 'PAID')
  .groupBy((_k, o) => o.customer, { key: stringSerde })
  .aggregate(() => 0, (_k, o, total) => total + o.amount, { state: jsonSerde<number>(), name: 'paid' })
  .toStream()
  .to('totals', { key: stringSerde, value: jsonSerde<number>() });

// @ts-expect-error the value type comes from the serde, so a field Order lacks is an error (and the API is not \`any\`)
app.stream('returns', { key: stringSerde, value: orderSerde }).filter((_k, o) => o.refunded);

const topics: readonly string[] = compile(app).topics.map((t) => t.name);
const first: TestRecord<string, number> | undefined = new TopologyTestDriver(app).output<string, number>('totals').readRecords()[0];
const spec: UpsertSpec = { table: 'totals', columns: ['total'] };
export const checked = [topics, first, spec, upsert] as const;
`;

describe(`the packed ${pkg.name} tarball, installed into a project of its own`, { timeout: 300_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'onceflow-pack-'));
  const app = join(dir, 'app');
  let packed: PackResult;

  before(() => {
    const started = Date.now();
    run('npm', ['run', '--silent', 'build'], root);
    const built = Date.now();
    // --ignore-scripts: prepack would build a second time.
    const [result] = JSON.parse(run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], root)) as PackResult[];
    assert.ok(result, 'npm pack --json printed no result');
    packed = result;
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module', dependencies: { [pkg.name]: `file:${packed.filename}` } }, null, 2));
    writeFileSync(join(app, 'package-lock.json'), JSON.stringify(scratchLockfile(packed), null, 2));
    copyFileSync(join(dir, packed.filename), join(app, packed.filename));
    // --ignore-scripts skips building @confluentinc/kafka-javascript from source (a minute); the
    // repository's build of the same locked version is linked in its place.
    run('npm', ['ci', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], app);
    const kafka = join(app, 'node_modules', '@confluentinc', 'kafka-javascript');
    rmSync(kafka, { recursive: true, force: true });
    symlinkSync(realpathSync(join(root, 'node_modules', '@confluentinc', 'kafka-javascript')), kafka, 'dir');
    console.log(`build ${built - started} ms, pack + install ${Date.now() - built} ms; ${packed.filename}: ${packed.size} bytes packed, ${packed.unpackedSize} unpacked, ${packed.entryCount} files`);
  });

  after(() => rmSync(dir, { recursive: true, force: true }));

  it('packs only what users run: dist/, bin/ and the package metadata', () => {
    const outside = packed.files.map((f) => f.path).filter((p) => !/^(dist|bin)\//.test(p) && !/^(package\.json|README\.md|LICENSE)$/.test(p));
    assert.deepEqual(outside, []);
    const paths = new Set(packed.files.map((f) => f.path));
    for (const entry of ['dist/src/index.js', 'dist/src/index.d.ts', 'dist/src/testing/index.js', 'dist/src/effects/index.d.ts', 'dist/src/cli/main.js', 'dist/src/kafka/SecurityAdmin.java', 'dist/src/console/assets/index.html', 'dist/src/console/assets/console.js', 'dist/src/console/assets/console.css', 'bin/onceflow.js']) {
      assert.ok(paths.has(entry), `${entry} is not in the tarball`);
    }
    assert.ok(packed.size < 1_000_000, `the tarball is ${packed.size} bytes`);
  });

  it('imports from plain node: builds, compiles and drives a topology; internals are not exported', () => {
    writeFileSync(join(app, 'app.mjs'), plainNode);
    const out = JSON.parse(run(process.execPath, ['app.mjs'], app)) as { topics: string[]; totals: [string, number][]; upsert: string; internals: string };
    assert.deepEqual(out.topics.sort(), ['orders', 'shop-dlq', 'shop-paid-changelog', 'shop-paid-repartition', 'totals']);
    assert.deepEqual(out.totals, [['c1', 5], ['c1', 7]]);
    assert.equal(out.upsert, 'function');
    assert.equal(out.internals, 'ERR_PACKAGE_PATH_NOT_EXPORTED');
  });

  it('type-checks under strict tsc, onceflow declarations included (skipLibCheck: false)', () => {
    writeFileSync(join(app, 'check.ts'), strictTs);
    const compilerOptions = { strict: true, noUncheckedIndexedAccess: true, module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', skipLibCheck: false, noEmit: true };
    writeFileSync(join(app, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['check.ts'] }, null, 2));
    run(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], app);
  });

  it('runs the installed CLI: --version and describe of a TypeScript topology file', () => {
    assert.equal(run('npx', ['--no-install', 'onceflow', '--version'], app).trim(), pkg.version);
    writeFileSync(join(app, 'topology.ts'), topology);
    const text = run('npx', ['--no-install', 'onceflow', 'describe', 'topology.ts'], app);
    assert.match(text, /^Topology: scratch-shop \(topology\.ts\)$/m);
    assert.match(text, /^ {4}Source: \S+ \(topics: \[orders\]\) \[inside the Kafka transaction\]$/m);
    assert.match(text, /^ {4}Sink: \S+ \(topic: spent-by-customer\)/m);
    assert.match(text, /^ {2}spent \(key-value, node spent, sub-topology 1, changelog scratch-shop-spent-changelog\)$/m);
    const json = JSON.parse(run('npx', ['--no-install', 'onceflow', 'describe', '--json', 'topology.ts'], app)) as { appId: string; subtopologies: unknown[]; topics: { name: string }[] };
    assert.equal(json.appId, 'scratch-shop');
    assert.equal(json.subtopologies.length, 2);
    assert.ok(json.topics.some((t) => t.name === 'scratch-shop-spent-repartition'));
    assert.ok(!existsSync(join(app, 'node_modules', pkg.name, 'src')), 'the installed package has src/, so the bin would run it instead of dist/');
  });

  it('the installed CLI runs a topology file against the broker, its stateless sub-topology on the processing thread', async () => {
    const bootstrap = process.env.ONCEFLOW_BOOTSTRAP;
    assert.ok(bootstrap, 'ONCEFLOW_BOOTSTRAP: this test needs the broker npm test starts');
    const tag = Date.now().toString(36);
    const [input, output] = [`pack-run-${tag}-in`, `pack-run-${tag}-out`];
    await withAdmin(bootstrap, (a) => ensureTopics(a, [{ name: input, partitions: 2 }, { name: output, partitions: 2 }]));
    await produceRecords(bootstrap, input, ['c1:5', 'c2:1', 'c1:2', 'c1:3'].map((v) => ({ key: Buffer.from(v), value: Buffer.from(v) })));
    const source = topology
      .replace("'orders'", `'${input}'`)
      .replace("'spent-by-customer'", `'${output}'`)
      .replace('jsonSerde<Order>()', 'stringSerde')
      .replace('(_k, o) => o.customer', "(_k, o) => o!.split(':')[0]!")
      .replace('total + o.amount', "total + Number(o!.split(':')[1])");
    writeFileSync(join(app, 'run-topology.ts'), source);
    // The bin itself, not through npx: a signal to npx does not reach the worker, which would outlive the test.
    const child = spawn(join(app, 'node_modules', '.bin', 'onceflow'), ['run', 'run-topology.ts', '--app-id', `pack-run-${tag}`, '--events', '--no-typecheck'], { cwd: app, env: { ...process.env, ONCEFLOW_BOOTSTRAP: bootstrap }, stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const events: { type: string; subtopologies?: number[]; off?: string }[] = [];
    void (async () => {
      for await (const line of createInterface({ input: child.stdout })) if (line.startsWith('{')) events.push(JSON.parse(line) as (typeof events)[number]);
    })();
    let totals = new Map<string, number>();
    try {
      const deadline = Date.now() + 90_000;
      while (!(totals.get('c1') === 10 && totals.get('c2') === 1) && Date.now() < deadline && child.exitCode === null) {
        await sleep(500);
        totals = new Map((await readTopic(bootstrap, output)).map((r) => [r.key!.toString(), Number(r.value!.toString())]));
      }
    } finally {
      child.kill('SIGTERM');
      const stopped = await Promise.race([exited.then(() => true), sleep(40_000).then(() => false)]);
      if (!stopped) child.kill('SIGKILL');
    }
    assert.deepEqual([...totals].sort(), [['c1', 10], ['c2', 1]], stderr);
    const thread = events.find((e) => e.type === 'processing-thread');
    assert.deepEqual(thread?.subtopologies, [0], `${JSON.stringify(thread)}\n${stderr}`);
  });

  it('the installed package serves the console page, its assets and the graph library from node_modules', () => {
    writeFileSync(
      join(app, 'serve.mjs'),
      `import { startConsoleServer } from './node_modules/${pkg.name}/dist/src/console/server.js';
const server = await startConsoleServer({ graph: undefined, latest: () => undefined, subscribe: () => () => undefined }, { port: 0 });
const got = {};
for (const path of ['/', '/assets/console.js', '/assets/console.css', '/assets/dagre.min.js']) {
  const res = await fetch(new URL(path, server.url));
  got[path] = [res.status, (await res.text()).length];
}
await server.close();
console.log(JSON.stringify(got));
`,
    );
    const got = JSON.parse(run(process.execPath, ['serve.mjs'], app)) as Record<string, [number, number]>;
    for (const [path, [status, length]] of Object.entries(got)) {
      assert.equal(status, 200, `${path}: HTTP ${status}`);
      assert.ok(length > 100, `${path}: ${length} bytes`);
    }
  });

  it('the installed CLI type-checks the topology first: a wrong lambda is a compile error, a pass is cached under node_modules/.cache', () => {
    const entries = readdirSync(join(app, 'node_modules', '.cache', 'onceflow', 'typecheck'));
    assert.equal(entries.filter((f) => f.endsWith('.json')).length, 1, `one entry, for topology.ts: ${entries.join(', ')}`);
    writeFileSync(join(app, 'wrong.ts'), topology.replace('.groupBy((_k, o) => o.customer', '.groupBy((o) => o.customer'));
    const r = spawnSync('npx', ['--no-install', 'onceflow', 'describe', 'wrong.ts'], { cwd: app, encoding: 'utf8' });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, /^onceflow: error \[TOPOLOGY_TYPE_ERROR\]: wrong\.ts does not type-check/);
    assert.match(r.stderr, /^wrong\.ts:8:\d+ - error TS\d+: /m);
    assert.doesNotMatch(r.stderr, /^\s+at /m);
  });
});
