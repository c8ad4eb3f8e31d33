import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer } from 'node:net';
import { promisify } from 'node:util';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KafkaConsumer } from '@confluentinc/kafka-javascript';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { compile } from '../../src/graph/compile.ts';
import { startObservability, type ObservabilityServer } from '../../src/observability/health.ts';
import { kafkaClients, type ClientSupplier } from '../../src/runtime/base/client-supplier.ts';
import { Worker } from '../../src/runtime/worker/worker.ts';
import type { WorkerEvent } from '../../src/runtime/base/worker-events.ts';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';
import { produceAll } from '../../src/verify/orders-input.ts';
import { waitCaughtUp } from '../../src/verify/progress.ts';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

function countApp(input: string, output: string): TopologyBuilder {
  const app = new TopologyBuilder({ appId: 'iq-counts' });
  app.stream(input, { key: stringSerde, value: stringSerde }).groupByKey().count({ name: 'counts' }).toStream().to(output, { value: jsonSerde<number>() });
  return app;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** The real clients, except that the store-restore consumer reads nothing until `open` is called. */
function gatedRestore(): { clients: ClientSupplier; open: () => void } {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const clients: ClientSupplier = {
    ...kafkaClients,
    consumer: async (config) => {
      const consumer = await kafkaClients.consumer(config);
      // The worker's own consumer has a rebalance callback; the restore consumer reads to partition EOF.
      if (config['enable.partition.eof'] === true && !('rebalance_cb' in config)) {
        const consume = consumer.consume.bind(consumer) as (n: number, cb: (err: unknown, messages: unknown[]) => void) => void;
        (consumer as unknown as { consume: typeof consume }).consume = (n, cb) => void gate.then(() => consume(n, cb));
      }
      return consumer satisfies KafkaConsumer;
    },
  };
  return { clients, open };
}

interface Replica {
  readonly worker: Worker;
  readonly http: ObservabilityServer;
  readonly url: string;
  readonly events: WorkerEvent[];
}

/** The replicas guard their store routes: a routed query reaches the owner only if the token travels with it. */
const QUERY_TOKEN = 'iq-test-token-5e0c1a9b';

async function startReplica(names: { appId: string; input: string; output: string }, instanceId: string, clients: ClientSupplier = kafkaClients): Promise<Replica> {
  const { bootstrap } = testCluster();
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const worker = new Worker(compile(countApp(names.input, names.output), { appId: names.appId }), { bootstrap, appId: names.appId, instanceId, advertisedUrl: url, commitIntervalMs: 100, queryToken: QUERY_TOKEN }, { clients });
  const events: WorkerEvent[] = [];
  worker.on('event', (e: WorkerEvent) => events.push(e));
  const http = await startObservability(worker, { port, host: '127.0.0.1', readyWithoutPartitions: true });
  cleanups.push(async () => {
    await worker.stop();
    await http.close();
  });
  await worker.start();
  return { worker, http, url, events };
}

async function getJson(url: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(url, { headers: { authorization: `Bearer ${QUERY_TOKEN}` }, signal: AbortSignal.timeout(30_000) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await probe();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

test('two replicas: a key owned by the other replica is answered through either one\'s HTTP server with the committed count; a restoring key answers 503', async () => {
  const { bootstrap } = testCluster();
  const names = { appId: uniqueName('iq'), input: uniqueName('iq-in'), output: uniqueName('iq-out') };
  await createTopics(bootstrap, [{ name: names.input, partitions: 4 }, { name: names.output, partitions: 4 }]);
  const keys = Array.from({ length: 24 }, (_, i) => `key-${i}`);
  const expected = new Map(keys.map((k, i) => [k, (i % 3) + 1]));
  await produceAll(bootstrap, names.input, keys.flatMap((k) => Array.from({ length: expected.get(k)! }, () => ({ key: k, value: 'x' }))));

  const a = await startReplica(names, 'a');
  await until('replica a to own partitions', 60_000, async () => (a.events.some((e) => e.type === 'assigned') ? true : undefined));
  await waitCaughtUp({ bootstrap, groupId: names.appId, plainTopics: [names.input], timeoutMs: 120_000 });
  // Alone, replica a owns every key.
  assert.deepEqual((await getJson(`${a.url}/stores/counts/key-1`)).body.value, 2);
  assert.equal((await getJson(`${a.url}/stores/counts/no-such-key`)).status, 404);
  assert.equal((await fetch(`${a.url}/stores/counts/key-1`)).status, 401, 'not without the token');
  const scan = await getJson(`${a.url}/stores/counts?prefix=key-1&limit=5`);
  assert.deepEqual(scan.body.entries, ['key-1', 'key-10', 'key-11', 'key-12', 'key-13'].map((k) => ({ key: k, value: expected.get(k) })));
  assert.equal(scan.body.more, true);

  // Replica b joins; its restore of the partitions it takes over is held until the gate opens.
  const gated = gatedRestore();
  // A failed assertion must not leave the restore, and with it the worker's stop, waiting forever.
  cleanups.push(async () => gated.open());
  const b = await startReplica(names, 'b', gated.clients);
  const restoringKey = await until('a key whose new owner is restoring', 120_000, async () => {
    for (const k of keys) {
      const res = await getJson(`${b.url}/stores/counts/${k}`);
      // The progress is known once the restore consumer has read the changelog's offsets.
      if (res.status === 503 && res.body.status === 'restoring' && (res.body.progress as unknown[]).length > 0) return { key: k, body: res.body };
    }
    return undefined;
  });
  const progress = restoringKey.body.progress as { topic: string; remaining: number }[];
  assert.ok(progress.length > 0 && progress.every((p) => p.topic === `${names.appId}-counts-changelog` && p.remaining > 0), JSON.stringify(progress));
  // Asked through the other replica, the query is routed to the owner and answers the same 503.
  const routed = await getJson(`${a.url}/metadata/counts/${restoringKey.key}?route=1`);
  assert.equal(routed.status, 503, JSON.stringify(routed.body));
  assert.equal(routed.body.status, 'restoring');
  // A caller that accepts stale state gets what is restored so far, marked as such.
  const stale = await getJson(`${b.url}/stores/counts/${restoringKey.key}?stale=1`);
  assert.equal(stale.body.stale, true, JSON.stringify(stale.body));

  gated.open();
  await until('replica b to finish restoring', 120_000, async () => (b.events.some((e) => e.type === 'assigned') ? true : undefined));
  await waitCaughtUp({ bootstrap, groupId: names.appId, plainTopics: [names.input], timeoutMs: 120_000 });

  const owners = new Map<string, string>();
  for (const k of keys) {
    const meta = await until(`an owner of ${k}`, 60_000, async () => {
      const res = await getJson(`${a.url}/metadata/counts/${k}`);
      return res.status === 200 ? res.body : undefined;
    });
    owners.set(k, (meta.owner as { url: string }).url);
    for (const via of [a, b]) {
      const res = await getJson(`${via.url}/stores/counts/${k}?route=1`);
      assert.equal(res.status, 200, `${k} via ${via.url}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.value, expected.get(k), `${k} via ${via.url}`);
      if (owners.get(k) !== via.url) assert.deepEqual((res.body.routedTo as { url: string }).url, owners.get(k));
      else assert.equal(res.body.routedTo, undefined);
    }
    // Without ?route=1 a replica that does not own the key says who does.
    const other = owners.get(k) === a.url ? b : a;
    const misdirected = await getJson(`${other.url}/stores/counts/${k}`);
    assert.equal(misdirected.status, 421);
  }
  assert.deepEqual(new Set(owners.values()), new Set([a.url, b.url]), 'both replicas own keys');
  // So does the CLI, which needs no topology file: any replica routes the query.
  const cli = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'query', names.appId, 'counts', 'key-2', '--bootstrap', bootstrap, '--query-token', QUERY_TOKEN], { encoding: 'utf8', timeout: 120_000 });
  assert.equal((JSON.parse(cli.stdout) as { value: number }).value, expected.get('key-2'));
  // The library call answers the same, wherever the key lives.
  for (const k of keys.slice(0, 6)) {
    const answer = await a.worker.queries.query<number>('counts', k);
    assert.equal(answer.status === 'found' ? answer.value : answer.status, expected.get(k));
  }
});
