/**
 * `npm test`: starts one local broker + registry for the whole run (node 20's test runner has no
 * global fixture), runs every test file with node's built-in runner against it, then stops it.
 * Set ONCEFLOW_BOOTSTRAP and ONCEFLOW_REGISTRY_URL to run against a cluster you started yourself.
 */
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
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

const code = await new Promise<number>((resolve) => {
  const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-timeout=600000', ...files], {
    cwd: root,
    env,
    stdio: 'inherit',
  });
  child.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0)));
});
await stop();
console.log(`suite finished in ${((Date.now() - started) / 1000).toFixed(1)} s (exit ${code})`);
process.exit(code);
