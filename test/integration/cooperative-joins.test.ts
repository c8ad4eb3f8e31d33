/**
 * Issue #41, part 2: a joining topology under the KIP-848 consumer group protocol (groupProtocol auto on a
 * Kafka 4 broker) with the broker's range assignor. A rebalance moves only the partitions that change
 * hands, partition N of the join's inputs together, and exactly-once holds through a join and a kill.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { compile } from '../../src/graph/index.ts';
import { readTopic } from '../../src/kafka/read-topic.ts';
import { produceAll } from '../../src/verify/orders-input.ts';
import { waitCaughtUp } from '../../src/verify/progress.ts';
import { eventually, WorkerProcess, type WorkerEventLine } from '../../src/verify/worker-process.ts';
import { runtimeTopology } from '../../src/runtime/task/worker-topology.ts';
import { enrichmentTopology } from '../../topology/enrichment.ts';
import type { Customer, EnrichedOrder, EnrichmentOrder } from '../../processors/enrichment.ts';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';

const PARTITIONS = 6;
const CUSTOMERS = 30;
const SEGMENTS = ['gold', 'silver', 'basic'];

/** The source partitions a worker owns after its events up to `until` (all by default). */
function owned(events: readonly WorkerEventLine[], until = events.length): Set<string> {
  const mine = new Set<string>();
  for (const e of events.slice(0, until)) {
    const partitions = (e.partitions ?? []) as string[];
    if (e.type === 'assigned') for (const p of partitions) mine.add(p);
    if (e.type === 'revoked') for (const p of partitions) mine.delete(p);
  }
  return mine;
}

/** An enrichment app on its own topics, its replicas, and the check that every order came out joined exactly once. */
async function enrichmentRun(extraEnv: Readonly<Record<string, string>> = {}) {
  const { bootstrap } = testCluster();
  const t = { orders: uniqueName('orders'), customers: uniqueName('customers'), enriched: uniqueName('enriched'), totals: uniqueName('totals') };
  const appId = uniqueName('app-coop');
  await createTopics(bootstrap, Object.values(t).map((name) => ({ name, partitions: PARTITIONS })));
  const env = {
    ONCEFLOW_BOOTSTRAP: bootstrap,
    ONCEFLOW_ENRICH_ORDERS: t.orders,
    ONCEFLOW_ENRICH_CUSTOMERS: t.customers,
    ONCEFLOW_ENRICH_ENRICHED: t.enriched,
    ONCEFLOW_ENRICH_TOTALS: t.totals,
    ONCEFLOW_COMMIT_INTERVAL_MS: '50',
    ONCEFLOW_SESSION_TIMEOUT_MS: '6000',
    ...extraEnv,
  };
  const compiled = compile(enrichmentTopology(t), { appId });
  const repartition = compiled.topics.filter((x) => x.kind === 'repartition').map((x) => x.name);
  const sourcePartitions = new Set(runtimeTopology(compiled).subtopologies.flatMap((s) => s.sourceTopics)).size * PARTITIONS;
  const workers = new Map<string, WorkerProcess>();
  const customers = new Map<string, Customer>();
  const expected = new Map<string, EnrichedOrder>();
  let produced = 0;
  return {
    bootstrap,
    workers,
    start(id: string): WorkerProcess {
      const w = new WorkerProcess(id, 'topology/enrichment.ts', ['--app-id', appId, '--instance-id', id], env);
      workers.set(id, w);
      return w;
    },
    /** Every source partition owned by exactly one live worker, each with its share. */
    async settled(live: readonly string[]): Promise<void> {
      await eventually(
        () => {
          const sets = live.map((id) => owned(workers.get(id)!.events));
          const all = sets.flatMap((s) => [...s]);
          // Balanced too: every partition owned once can still be a step of the broker's reconciliation, not its target.
          const fairShare = Math.floor(PARTITIONS / live.length) * (sourcePartitions / PARTITIONS);
          return all.length === sourcePartitions && new Set(all).size === sourcePartitions && sets.every((s) => s.size >= fairShare);
        },
        120_000,
        `${sourcePartitions} source partitions spread over ${live.join(', ')}`,
      );
    },
    caughtUp: () => waitCaughtUp({ bootstrap, groupId: appId, plainTopics: [t.orders, t.customers], transactionalTopics: repartition, stableMs: 1_000, timeoutMs: 180_000 }),
    async produceCustomers(): Promise<void> {
      const rows = Array.from({ length: CUSTOMERS }, (_, c): Customer => ({ customerId: `c${c}`, name: `customer ${c}`, segment: SEGMENTS[c % SEGMENTS.length]!, version: 1 }));
      for (const row of rows) customers.set(row.customerId, row);
      await produceAll(bootstrap, t.customers, rows.map((row) => ({ key: row.customerId, value: JSON.stringify(row) })));
    },
    async produceOrders(count: number): Promise<void> {
      const batch = Array.from({ length: count }, (_, i): EnrichmentOrder => ({ orderId: `o${produced + i}`, customerId: `c${(produced + i) % CUSTOMERS}`, amount: 1 + ((produced + i) % 97) }));
      produced += count;
      for (const o of batch) {
        const c = customers.get(o.customerId)!;
        expected.set(o.orderId, { ...o, segment: c.segment, customerVersion: c.version });
      }
      await produceAll(bootstrap, t.orders, batch.map((o) => ({ key: o.orderId, value: JSON.stringify(o) })));
    },
    /** Duplicates, lost and wrongly joined orders in the committed output. */
    async outcome(): Promise<{ duplicates: number; lost: number; wrong: number; examples: string[] }> {
      const seen = new Map<string, number>();
      let wrong = 0;
      const examples: string[] = [];
      for (const r of await readTopic(bootstrap, t.enriched, { isolation: 'read_committed' })) {
        const v = JSON.parse(r.value!.toString()) as EnrichedOrder;
        seen.set(v.orderId, (seen.get(v.orderId) ?? 0) + 1);
        const want = expected.get(v.orderId);
        if (!want || want.segment !== v.segment || want.amount !== v.amount) {
          wrong++;
          if (examples.length < 5) examples.push(`${JSON.stringify(v)} expected ${JSON.stringify(want)}`);
        }
      }
      const duplicates = [...seen.values()].reduce((n, c) => n + (c - 1), 0);
      const lost = [...expected.keys()].filter((id) => !seen.has(id)).length;
      return { duplicates, lost, wrong, examples };
    },
    async stopAll(): Promise<void> {
      await Promise.all([...workers.values()].map((w) => w.stop(15_000)));
    },
  };
}

describe('a joining topology under the consumer group protocol (real broker)', { concurrency: false }, () => {
  test('a replica joining a 3-replica group running topology/enrichment.ts does not stop the tasks that stay put', async () => {
    const run = await enrichmentRun();
    try {
      for (const id of ['a', 'b', 'c']) run.start(id);
      for (const w of run.workers.values()) {
        const chosen = await w.waitFor((e) => e.type === 'group-protocol', 90_000, 'the group protocol');
        assert.deepEqual([chosen.protocol, chosen.assignor], ['consumer', 'range'], String(chosen.reason));
        const session = await w.waitFor((e) => e.type === 'group-session-timeout', 90_000, 'the group session timeout');
        assert.equal(session.applied, true, String(session.reason));
      }
      await run.settled(['a', 'b', 'c']);
      await run.produceCustomers();
      await run.caughtUp();
      await run.produceOrders(600);
      const mark = new Map([...run.workers].map(([id, w]) => [id, w.events.length]));
      const before = new Map([...run.workers].map(([id, w]) => [id, owned(w.events)]));
      run.start('d');
      await run.produceOrders(600);
      await run.settled(['a', 'b', 'c', 'd']);
      await run.caughtUp();
      const ownerNow = new Map([...run.workers].flatMap(([id, w]) => [...owned(w.events)].map((p) => [p, id] as const)));
      const history = [...run.workers].map(([id, w]) => `${id}: ${w.events.filter((e) => e.type === 'assigned' || e.type === 'revoked').map((e, i) => `${i === 0 ? '' : ' '}${e.type} ${(e.partitions as string[]).map((p) => p.replace(/^.*?-[0-9a-f]{8}-/, '')).join(',')}${e.lost === true ? ' (lost)' : ''}`).join(';')}`).join('\n');
      assert.ok(owned(run.workers.get('d')!.events).size > 0, `the 4th replica got no partition:\n${history}`);
      let stayed = 0;
      for (const id of ['a', 'b', 'c']) {
        const w = run.workers.get(id)!;
        const after = w.events.slice(mark.get(id));
        const revoked = new Set(after.filter((e) => e.type === 'revoked').flatMap((e) => e.partitions as string[]));
        // A revoked partition is one that moved to another replica; a partition that stays was never revoked (its task never closed).
        assert.deepEqual([...revoked].filter((p) => ownerNow.get(p) === id), [], `${id} revoked partitions it owns again:\n${history}`);
        assert.equal(after.filter((e) => e.type === 'revoked' && e.lost === true).length, 0, `${id} lost partitions:\n${history}`);
        stayed += [...before.get(id)!].filter((p) => ownerNow.get(p) === id && !revoked.has(p)).length;
      }
      // The eager protocol would have revoked every partition of every replica.
      assert.ok(stayed > 0, `no task stayed put:\n${history}`);
      const { duplicates, lost, wrong, examples } = await run.outcome();
      assert.deepEqual({ duplicates, lost, wrong }, { duplicates: 0, lost: 0, wrong: 0 }, examples.join('\n'));
    } finally {
      await run.stopAll();
    }
  });

  test('SIGKILL of one of 3 replicas mid-stream under the consumer protocol: every order joined exactly once', async () => {
    const run = await enrichmentRun();
    try {
      for (const id of ['a', 'b', 'c']) run.start(id);
      await run.settled(['a', 'b', 'c']);
      await run.produceCustomers();
      await run.caughtUp();
      await run.produceOrders(1_000);
      const victim = run.workers.get('b')!;
      const committedSoFar = victim.count('committed');
      await victim.waitFor((e) => e.type === 'committed' && victim.count('committed') > committedSoFar, 60_000, 'a commit after the orders');
      victim.kill('SIGKILL');
      await victim.exit();
      await run.produceOrders(1_000);
      // The broker times the dead member out after the group's session timeout and hands its partitions on.
      await run.settled(['a', 'c']);
      await run.caughtUp();
      const { duplicates, lost, wrong, examples } = await run.outcome();
      assert.deepEqual({ duplicates, lost, wrong }, { duplicates: 0, lost: 0, wrong: 0 }, examples.join('\n'));
    } finally {
      await run.stopAll();
    }
  });

  test('a zombie (SIGSTOPped until the broker evicts it) under the consumer protocol: none of its later writes is visible, and it recovers', async () => {
    const run = await enrichmentRun({ ONCEFLOW_SESSION_TIMEOUT_MS: '3000' });
    try {
      const a = run.start('a');
      await run.settled(['a']);
      await run.produceCustomers();
      await run.caughtUp();
      await run.produceOrders(600);
      await a.waitFor((e) => e.type === 'committed', 60_000, 'a commit');
      // Orders keep arriving so that A most likely has an open transaction when it freezes.
      const feeding = run.produceOrders(1_000);
      a.kill('SIGSTOP');
      await feeding;
      const b = run.start('b');
      await run.settled(['b']);
      await b.waitFor((e) => e.type === 'committed', 90_000, "B's first commit");
      const eventsBefore = a.events.length;
      a.kill('SIGCONT');
      await run.produceOrders(600);
      await a.waitFor((e) => a.events.indexOf(e) >= eventsBefore && ['fenced', 'aborted', 'revoked'].includes(e.type), 60_000, 'A noticing it was evicted');
      await run.settled(['a', 'b']);
      await run.caughtUp();
      const { duplicates, lost, wrong, examples } = await run.outcome();
      assert.deepEqual({ duplicates, lost, wrong }, { duplicates: 0, lost: 0, wrong: 0 }, examples.join('\n'));
      assert.ok(a.alive, 'the zombie recovered instead of crashing');
    } finally {
      await run.stopAll();
    }
  });
});
