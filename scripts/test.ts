/**
 * `npm test`: starts one local broker + registry for the whole run (node 20's test runner has no
 * global fixture), runs every test file with node's built-in runner against it, then stops it.
 * Set ONCEFLOW_BOOTSTRAP and ONCEFLOW_REGISTRY_URL to run against a cluster you started yourself.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { startLocalCluster, stopLocalCluster } from '../src/kafka/local-cluster.ts';
import { projectRoot } from '../src/kafka/paths.ts';

const root = projectRoot();
const only = process.argv.slice(2);

function testFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return testFiles(path);
    return name.endsWith('.test.ts') ? [relative(root, path)] : [];
  });
}

const files = (only.length > 0 ? only : testFiles(join(root, 'test'))).sort();
const started = Date.now();
const own = !process.env.ONCEFLOW_BOOTSTRAP;
const clusterDir = join(root, '.onceflow', `test-${process.pid}`);
let env = { ...process.env };
if (own) {
  const info = await startLocalCluster({ dir: clusterDir });
  console.log(`test cluster: broker ${info.bootstrap} (${info.brokerStartMs} ms), registry ${info.registryUrl} (${info.registryStartMs} ms)`);
  env = { ...env, ONCEFLOW_BOOTSTRAP: info.bootstrap, ONCEFLOW_REGISTRY_URL: info.registryUrl, ONCEFLOW_TEST_CLUSTER_DIR: clusterDir };
}

let stopping: Promise<unknown> | undefined;
const stop = () => (stopping ??= own ? stopLocalCluster(clusterDir) : Promise.resolve());
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => void stop().then(() => process.exit(130)));
}

// A test process killed by a signal inside a native module (the Kafka client) leaves only "SIGSEGV" in the
// runner's report: with core files on, the run ends with each crashed process's native stack.
const runner = [process.execPath, '--import', 'tsx', '--test', '--test-concurrency=2', '--test-timeout=600000', ...files];
const code = await new Promise<number>((resolve) => {
  const child = spawn('bash', ['-c', 'ulimit -c unlimited 2>/dev/null; exec "$@"', 'test-runner', ...runner], {
    cwd: root,
    env,
    stdio: 'inherit',
  });
  child.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0)));
});
await stop();
printNativeStacks();
console.log(`suite finished in ${((Date.now() - started) / 1000).toFixed(1)} s (exit ${code})`);
process.exit(code);

/** With the kernel's default core pattern (`core` or `core.<pid>` in the crashed process's directory), the stack of each core the run left, then the core removed. */
function printNativeStacks(): void {
  let pattern = '';
  try {
    pattern = readFileSync('/proc/sys/kernel/core_pattern', 'utf8').trim();
  } catch {
    return;
  }
  if (pattern.startsWith('|') || pattern.includes('/')) return;
  for (const name of readdirSync(root).filter((n) => /^core(\.\d+)?$/.test(n))) {
    const core = join(root, name);
    const gdb = spawnSync('gdb', ['-batch', '-ex', 'bt 30', process.execPath, core], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    console.log(`native stack of ${name}:\n${gdb.error ? `(gdb not available: ${gdb.error.message})` : gdb.stdout.split('\n').filter((l) => !l.startsWith('[New LWP')).join('\n')}`);
    rmSync(core, { force: true });
  }
}
