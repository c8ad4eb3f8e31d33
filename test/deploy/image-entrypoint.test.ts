/**
 * The Docker image's entry point started as a pod of deploy/kubernetes/statefulset.yaml would start
 * it, without a Docker engine: the Dockerfile's ENTRYPOINT with the container's args, in WORKDIR
 * (the image is the repository: /app is the checkout), with the image's ENV and the pod's env, the
 * ConfigMap and the state volume mounted at their paths (here: folders the paths are mapped to).
 * Against the test broker, the probes the manifest names must answer, and the store routes must ask
 * for the Secret's token while the probes and metrics stay open.
 */
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';
import { freePort } from '../support/ports.ts';
import { containerEnv, loadManifests, readDockerfile, resourceOf, root, workerContainer, type StatefulSet } from './manifests.ts';

const scratch = mkdtempSync(join(tmpdir(), 'onceflow-image-'));
let child: ChildProcess | undefined;
after(() => {
  if (child?.exitCode === null) child.kill('SIGKILL');
  rmSync(scratch, { recursive: true, force: true });
});

async function until<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  // Generous: a 2-core machine shared with other test processes, and a type check on a cold cache.
  const deadline = Date.now() + 180_000;
  for (;;) {
    if (child?.exitCode !== null && child?.exitCode !== undefined) throw new Error(`the worker exited with ${child.exitCode} while waiting for ${what}`);
    const found = await probe().catch(() => undefined);
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

test("the image's entry point, run with the StatefulSet's args and env, becomes live and ready, and guards the stores with the Secret's token", async () => {
  const { bootstrap } = testCluster();
  const { resources } = loadManifests();
  const set = resourceOf<StatefulSet>(resources, 'StatefulSet');
  const container = workerContainer(set);
  const configMap = resourceOf(resources, 'ConfigMap');
  const image = readDockerfile();
  assert.deepEqual(image.cmd, [], 'the args are the whole command: no CMD to append to');

  // The container's paths on this machine: the image's WORKDIR is the repository, each volume a scratch folder.
  const mounts = new Map<string, string>([[image.workdir, root]]);
  for (const mount of container.volumeMounts) {
    const dir = join(scratch, mount.name);
    mkdirSync(dir, { recursive: true });
    const volume = set.spec.template.spec.volumes.find((v) => v.name === mount.name);
    if (volume?.configMap) for (const [file, text] of Object.entries(configMap.data ?? {})) writeFileSync(join(dir, file), text);
    mounts.set(mount.mountPath, dir);
  }
  const local = (word: string): string => {
    for (const [from, to] of mounts) if (word === from || word.startsWith(`${from}/`)) return to + word.slice(from.length);
    return word;
  };

  const token = randomBytes(32).toString('hex');
  const podName = `${set.metadata.name}-0`;
  const podEnv = containerEnv(container, { podName, namespace: 'default', secrets: { 'onceflow-orders-query': { token } } });
  const port = await freePort();
  const appId = uniqueName('deploy-orders');
  const topics = { input: uniqueName('deploy-orders-in'), output: uniqueName('deploy-orders-out') };
  await createTopics(bootstrap, [{ name: topics.input, partitions: 3 }, { name: topics.output, partitions: 3 }]);
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    ...image.env,
    // What the kubelet adds to every container.
    HOSTNAME: podName,
    KUBERNETES_SERVICE_HOST: '10.96.0.1',
    KUBERNETES_SERVICE_PORT: '443',
    ...podEnv,
    // This test's own: the test broker, names no other test uses, a free port (the pod's is fixed), a URL that resolves here.
    ONCEFLOW_BOOTSTRAP: bootstrap,
    ONCEFLOW_APP_ID: appId,
    ONCEFLOW_ORDERS_INPUT: topics.input,
    ONCEFLOW_ORDERS_OUTPUT: topics.output,
    ONCEFLOW_HTTP_PORT: String(port),
    ONCEFLOW_ADVERTISED_URL: `http://127.0.0.1:${port}`,
  };
  assert.equal(podEnv.ONCEFLOW_HTTP_PORT !== undefined, true, 'the pod sets the HTTP port');

  const [program, ...programArgs] = [...image.entrypoint, ...container.args].map(local);
  assert.equal(program, 'node', 'the entry point runs node');
  const stderr: string[] = [];
  child = spawn(process.execPath, programArgs, { cwd: local(image.workdir), env, stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => stderr.push(chunk));
  const url = (path: string): string => `http://127.0.0.1:${port}${path}`;
  const status = async (path: string, headers: Record<string, string> = {}): Promise<number> => (await fetch(url(path), { headers, signal: AbortSignal.timeout(10_000) })).status;

  try {
    await until('/healthz to answer 200', async () => ((await status(container.livenessProbe.httpGet.path)) === 200 ? true : undefined));
    await until('/readyz to answer 200', async () => ((await status(container.readinessProbe.httpGet.path)) === 200 ? true : undefined));

    // The store routes want the token; the probes and Prometheus' path do not.
    assert.equal(await status('/stores'), 401);
    assert.equal(await status('/stores', { authorization: 'Bearer not-the-token-0123456789' }), 401);
    assert.equal(await status(`/metadata/customer-paid/c-1`), 401);
    const stores = await fetch(url('/stores'), { headers: { authorization: `Bearer ${token}` } });
    assert.equal(stores.status, 200);
    const names = ((await stores.json()) as { stores: { name: string }[] }).stores.map((s) => s.name);
    assert.ok(names.includes('customer-paid'), `the orders topology's stores: ${names.join(', ')}`);
    assert.equal(await status(set.spec.template.metadata.annotations?.['prometheus.io/path'] ?? '/unset'), 200);
    assert.equal(await status(container.livenessProbe.httpGet.path), 200);

    // `onceflow query` finds the replica through the group and sends the token it is given.
    const query = async (extraEnv: Record<string, string>): Promise<{ code: number; out: string }> => {
      const queryEnv = { PATH: env.PATH!, ONCEFLOW_BOOTSTRAP: bootstrap, ...extraEnv };
      try {
        const { stdout } = await promisify(execFile)(process.execPath, [join(root, 'bin', 'onceflow.js'), 'query', appId, 'customer-paid', 'no-such-customer'], { cwd: root, env: queryEnv });
        return { code: 0, out: stdout };
      } catch (e) {
        const failed = e as { code?: number; stdout?: string };
        return { code: failed.code ?? -1, out: failed.stdout ?? '' };
      }
    };
    const withToken = await query({ ONCEFLOW_QUERY_TOKEN: token });
    assert.equal(withToken.code, 2, `a missing key, answered: ${withToken.out}`);
    assert.equal((JSON.parse(withToken.out) as { status: string }).status, 'missing');
    const withoutToken = await query({});
    assert.equal(withoutToken.code, 1, `refused: ${withoutToken.out}`);
    assert.match(withoutToken.out, /Authorization: Bearer/);

    // SIGTERM, as the kubelet sends it: the worker commits, leaves the group and exits cleanly.
    const exited = new Promise<number | null>((resolve) => child!.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    assert.equal(await exited, 0, stderr.join('').slice(-2_000));
  } catch (e) {
    throw new Error(`${e instanceof Error ? e.message : String(e)}\nworker stderr (tail):\n${stderr.join('').slice(-4_000)}`, { cause: e });
  }
});
