/**
 * The package as a user gets it: built, packed with `npm pack`, installed from the tarball into a
 * project of its own, then imported from plain `node`, type-checked by a strict `tsc` that also checks
 * onceflow's declarations, and run as the installed `onceflow` command, down to `dev up` with an empty jar
 * cache and the commands that find its broker from the app, and `chaos` running the example topology the package
 * ships. Nothing the checks run comes from src/.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { projectRoot } from '../../src/kafka/paths.ts';
import { readTopic } from '../../src/kafka/read-topic.ts';
import { driverTest, pkg, plainNode, scratchLockfile, strictTs, topology, type PackResult } from '../support/packed-app.ts';

const root = projectRoot();

function run(cmd: string, args: readonly string[], cwd: string, opts: { env?: NodeJS.ProcessEnv; input?: string } = {}): string {
  return runFull(cmd, args, cwd, opts).stdout;
}

function runFull(cmd: string, args: readonly string[], cwd: string, opts: { env?: NodeJS.ProcessEnv; input?: string } = {}): { stdout: string; stderr: string } {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', maxBuffer: 64 << 20, ...opts });
  if (r.error) throw r.error;
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')} (in ${cwd}) exited ${r.status}\n${r.stdout}\n${r.stderr}`);
  return r;
}

describe(`the packed ${pkg.name} tarball, installed into a project of its own`, { timeout: 420_000 }, () => {
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

  it('packs only what users run and read: dist/, bin/, docs/ and the package metadata', () => {
    const outside = packed.files.map((f) => f.path).filter((p) => !/^(dist|bin|docs)\//.test(p) && !/^(package\.json|README\.md|LICENSE)$/.test(p));
    assert.deepEqual(outside, []);
    const paths = new Set(packed.files.map((f) => f.path));
    for (const entry of ['dist/src/index.js', 'dist/src/index.d.ts', 'dist/src/testing/index.js', 'dist/src/effects/index.d.ts', 'dist/src/cli/main.js', 'dist/src/kafka/SecurityAdmin.java', 'dist/src/kafka/broker-jars.pom.xml', 'docs/dsl.md', 'dist/src/console/assets/index.html', 'dist/src/console/assets/console.js', 'dist/src/console/assets/console.css', 'bin/onceflow.js']) {
      assert.ok(paths.has(entry), `${entry} is not in the tarball`);
    }
    assert.ok(packed.size < 1_000_000, `the tarball is ${packed.size} bytes`);
  });

  it('every relative link in the installed README and docs resolves to a file the package holds', () => {
    const installed = join(app, 'node_modules', pkg.name);
    const pages = ['README.md', ...readdirSync(join(installed, 'docs')).filter((f) => f.endsWith('.md')).map((f) => join('docs', f))];
    const dead = pages.flatMap((page) =>
      [...readFileSync(join(installed, page), 'utf8').matchAll(/\]\(([^)\s#]+)(#[^)]*)?\)/g)]
        .map((m) => m[1]!)
        .filter((target) => !/^[a-z]+:/.test(target) && !existsSync(join(installed, dirname(page), target)))
        .map((target) => `${page} -> ${target}`),
    );
    assert.deepEqual(dead, []);
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

  it('runs a TypeScript test on Node 20 with `node --import tsx --test`, the command the README gives', () => {
    writeFileSync(join(app, 'shop.ts'), topology);
    writeFileSync(join(app, 'shop.test.ts'), driverTest);
    // Without the runner's NODE_TEST_CONTEXT, which would make the child report to this run instead of printing.
    const { NODE_TEST_CONTEXT: _runner, ...env } = process.env;
    assert.match(run(process.execPath, ['--import', 'tsx', '--test', 'shop.test.ts'], app, { env }), /^# pass 1$/m);
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

  describe('dev Kafka from the app: `dev up` with an empty jar cache, then commands that find it without --bootstrap', () => {
    // A jar cache of its own, empty: `dev up` must fetch the broker's jars itself (Maven, from ~/.m2 when it
    // holds them, else from Maven Central). No broker address in the environment: only dev.json can name it.
    const cache = join(dir, 'jar-cache');
    const env: NodeJS.ProcessEnv = { ...process.env, ONCEFLOW_CACHE: cache };
    for (const name of ['ONCEFLOW_BOOTSTRAP', 'ONCEFLOW_REGISTRY_URL', 'ONCEFLOW_HOME']) delete env[name];
    // The bin itself, not through npx: a signal to npx does not reach the worker, which would outlive the test.
    const bin = (): string => join(app, 'node_modules', '.bin', 'onceflow');
    const sub = (): string => join(app, 'src', 'jobs');
    const tag = Date.now().toString(36);
    const [input, output] = [`pack-run-${tag}-in`, `pack-run-${tag}-out`];
    let bootstrap = '';

    before(() => {
      const up = runFull(bin(), ['dev', 'up', '--no-registry'], app, { env });
      assert.match(up.stderr, /fetching Apache Kafka jars with Maven into .*jar-cache/, up.stderr);
      assert.ok(existsSync(join(cache, 'kafka', 'libs', '.complete')), 'no finished fetch in the jar cache');
      assert.ok(up.stdout.includes(`(written to ${join(app, '.onceflow')}/dev.json)`), up.stdout);
      assert.doesNotMatch(up.stdout, /ONCEFLOW_REGISTRY_URL/, 'no registry was started, so there is no address to print');
      bootstrap = (JSON.parse(readFileSync(join(app, '.onceflow', 'dev.json'), 'utf8')) as { bootstrap: string }).bootstrap;
      mkdirSync(sub(), { recursive: true });
    });

    after(() => {
      run(bin(), ['dev', 'down'], app, { env });
    });

    it('topics, produce and consume run from a subdirectory of the app against the `dev up` broker', () => {
      assert.match(run(bin(), ['topics', 'create', input, output, '--partitions', '2'], sub(), { env }), new RegExp(`created: ${input}`));
      assert.match(run(bin(), ['produce', input, '--format', 'text'], sub(), { env, input: 'c1:5\nc2:1\nc1:2\nc1:3\n' }), /produced 4 record/);
      const lines = run(bin(), ['consume', input, '--from-beginning', '--max', '4'], sub(), { env }).trim().split('\n');
      assert.deepEqual(lines.map((l) => (JSON.parse(l) as { value: string }).value).sort(), ['c1:2', 'c1:3', 'c1:5', 'c2:1']);
    });

    it('`run` of a topology file finds the same broker; its stateless sub-topology runs on the processing thread', async () => {
      const source = topology
        .replace("'orders'", `'${input}'`)
        .replace("'spent-by-customer'", `'${output}'`)
        .replace('jsonSerde<Order>()', 'stringSerde')
        .replace('(_k, o) => o.customer', "(_k, o) => o!.split(':')[0]!")
        .replace('total + o.amount', "total + Number(o!.split(':')[1])");
      writeFileSync(join(app, 'run-topology.ts'), source);
      const child = spawn(bin(), ['run', '../../run-topology.ts', '--app-id', `pack-run-${tag}`, '--events', '--no-typecheck'], { cwd: sub(), env, stdio: ['ignore', 'pipe', 'pipe'] });
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

    it('`chaos` runs the example topology the package ships, its replicas started by the installed CLI, and verifies exactly-once through a kill', () => {
      // Tiny counts: what is under test is that the package finds its own CLI and topology, not the guarantee at scale.
      const json = join(dir, 'chaos.json');
      const args = ['chaos', '--bootstrap', bootstrap, '--records', '300', '--replicas', '2', '--kills', '1', '--feed-ms', '3000', '--json', json];
      const { stderr } = runFull(bin(), args, sub(), { env });
      const result = JSON.parse(readFileSync(json, 'utf8')) as { ok: boolean; pipeline: string; records: number; duplicates: number; lost: number; aggregateMismatches: number; workerExits: number; liveReader: { records: number } };
      assert.deepEqual(
        { ok: result.ok, pipeline: result.pipeline, records: result.records, duplicates: result.duplicates, lost: result.lost, mismatches: result.aggregateMismatches, workerExits: result.workerExits },
        { ok: true, pipeline: 'orders', records: 300, duplicates: 0, lost: 0, mismatches: 0, workerExits: 0 },
        stderr,
      );
      assert.ok(result.liveReader.records > 0, `the read_committed reader saw no output\n${stderr}`);
      assert.match(stderr, /SIGKILL r\d/, 'a replica was killed');
    });
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
