import { spawnSync } from 'node:child_process';

/**
 * Starts a local broker (no registry) in `dir` and returns its bootstrap. Started from a separate
 * node process: the admin clients its readiness probe creates and drops were seen to crash the
 * calling process (SIGSEGV) later, when garbage-collected under a large backlog.
 */
export function startBenchBroker(dir: string): string {
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', '-e', `import('./src/kafka/local-cluster.ts').then(async (m) => { const i = await m.startLocalCluster({ dir: ${JSON.stringify(dir)}, withRegistry: false }); process.stdout.write(i.bootstrap); process.exit(0); })`],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
  );
  if (r.status !== 0 || !r.stdout.trim()) throw new Error(`could not start the local broker (exit ${r.status})`);
  return r.stdout.trim();
}
