import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { Command } from 'commander';
import { registerOutbox } from '../../src/cli/outbox.ts';
import { createOutboxTable, EVENT_ID_HEADER, OutboxRelay, pendingCount, writeWithOutbox, type OutboxEvent } from '../../src/effects/outbox-relay.ts';
import type { IncomingRecord } from '../../src/core/records.ts';
import { readTopic } from '../../src/kafka/read-topic.ts';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';
import { PG_URL, pool, withSchema } from '../effects/pg.ts';

const db = pool(12);
after(() => db.end());

interface Published {
  readonly eventId: string;
  readonly key: string;
  readonly seq: number;
}
function published(records: readonly IncomingRecord[]): Published[] {
  return records.map((r) => {
    const header = r.headers.find((h) => h.key === EVENT_ID_HEADER);
    assert.ok(header, 'every relayed record carries onceflow.event.id');
    const payload = JSON.parse(r.value?.toString() ?? 'null') as { seq: number };
    return { eventId: header.value.toString(), key: r.key?.toString() ?? '', seq: payload.seq };
  });
}
/** What a consumer-side dedupe on the event id keeps: each event's first occurrence, in order. */
function firstOccurrences(list: readonly Published[]): Published[] {
  const seen = new Set<string>();
  return list.filter((p) => !seen.has(p.eventId) && (seen.add(p.eventId), true));
}
function byKey(list: readonly Published[]): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const p of list) out.set(p.key, [...(out.get(p.key) ?? []), p.seq]);
  return out;
}
function counts(list: readonly Published[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const p of list) out.set(p.eventId, (out.get(p.eventId) ?? 0) + 1);
  return out;
}

/** The application: an order row and its event, one transaction. */
async function placeOrders(schema: string, table: string, events: readonly OutboxEvent[]): Promise<void> {
  const client = await db.connect();
  try {
    for (const e of events) {
      await writeWithOutbox(client, table, (c) => c.query(`INSERT INTO "${schema}".orders (id, aggregate) VALUES ($1, $2)`, [e.eventId, e.aggregateKey]), [e]);
    }
  } finally {
    client.release();
  }
}

test('outbox: rows and events commit together; a rolled-back write leaves no event', async () => {
  await withSchema(db, 'outbox', async (s) => {
    const table = `${s}.outbox`;
    await createOutboxTable(db, table);
    await db.query(`CREATE TABLE "${s}".orders (id text PRIMARY KEY, aggregate text NOT NULL)`);
    await placeOrders(s, table, [{ aggregateKey: 'a', eventId: 'e1', payload: { seq: 1 } }]);
    const client = await db.connect();
    try {
      // The order insert violates the primary key: its event must not survive either.
      await assert.rejects(writeWithOutbox(client, table, (c) => c.query(`INSERT INTO "${s}".orders VALUES ('e1', 'a')`), [{ aggregateKey: 'a', eventId: 'e2', payload: {} }]));
    } finally {
      client.release();
    }
    assert.deepEqual((await db.query(`SELECT event_id FROM ${table}`)).rows, [{ event_id: 'e1' }]);
  });
});

test('outbox relay: a crash after publish and before mark republishes exactly that batch; dedupe on the event id restores the complete set in order', async () => {
  const { bootstrap } = testCluster();
  const topic = uniqueName('outbox-crash');
  await createTopics(bootstrap, [{ name: topic, partitions: 3 }]);
  await withSchema(db, 'outbox', async (s) => {
    const table = `${s}.outbox`;
    await createOutboxTable(db, table);
    await db.query(`CREATE TABLE "${s}".orders (id text PRIMARY KEY, aggregate text NOT NULL)`);
    const events = Array.from({ length: 10 }, (_, i) => ({ aggregateKey: `agg-${i % 3}`, eventId: `ev-${i}`, payload: { seq: Math.floor(i / 3) + 1 } }));
    await placeOrders(s, table, events);

    let crashedBatch: string[] = [];
    const crashing = new OutboxRelay({
      pool: db, table, topic, bootstrap, batchSize: 4,
      hooks: {
        afterPublish: (rows) => {
          crashedBatch = rows.map((r) => r.eventId);
          throw new Error('injected crash between publish and mark');
        },
      },
    });
    await crashing.start();
    try {
      await assert.rejects(crashing.runOnce(), /injected crash/);
    } finally {
      await crashing.stop();
    }
    assert.equal(crashedBatch.length, 4);
    assert.equal(await pendingCount(db, table), 10, 'the crashed batch was never marked');

    const restarted = new OutboxRelay({ pool: db, table, topic, bootstrap, batchSize: 4 });
    await restarted.start();
    try {
      assert.equal(await restarted.drain(), 10);
    } finally {
      await restarted.stop();
    }
    assert.equal(await pendingCount(db, table), 0);

    const got = published(await readTopic(bootstrap, topic));
    const c = counts(got);
    const twice = [...c].filter(([, n]) => n === 2).map(([id]) => id).sort();
    console.log(`outbox crash: ${got.length} records for ${c.size} events; duplicated: ${twice.join(', ')}`);
    assert.equal(got.length, 14);
    assert.deepEqual(twice, [...crashedBatch].sort(), 'exactly the batch published before the crash appears twice');
    assert.ok([...c.values()].every((n) => n === 1 || n === 2));
    const deduped = firstOccurrences(got);
    assert.deepEqual(deduped.map((p) => p.eventId).sort(), events.map((e) => e.eventId).sort(), 'the set of event ids is complete');
    for (const [key, seqs] of byKey(deduped)) assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b), `order kept for ${key}`);
  });
});

test('outbox relay: two relays racing concurrent writers publish every event exactly once, in order per aggregate', async () => {
  const { bootstrap } = testCluster();
  const topic = uniqueName('outbox-two');
  await createTopics(bootstrap, [{ name: topic, partitions: 4 }]);
  await withSchema(db, 'outbox', async (s) => {
    const table = `${s}.outbox`;
    await createOutboxTable(db, table);
    await db.query(`CREATE TABLE "${s}".counters (aggregate text PRIMARY KEY, n int NOT NULL)`);
    const AGGREGATES = 8;
    const PER_WRITER = 30;
    const WRITERS = 6;
    await db.query(`INSERT INTO "${s}".counters SELECT 'agg-' || g, 0 FROM generate_series(0, ${AGGREGATES - 1}) g`);

    // Writers share aggregates; each transaction bumps the aggregate's counter (the application's
    // row) and emits the event carrying the new value, so the order per aggregate is known.
    const writer = async (w: number) => {
      const client = await db.connect();
      try {
        for (let i = 0; i < PER_WRITER; i++) {
          const agg = `agg-${(w * 3 + i) % AGGREGATES}`;
          await writeWithOutbox(
            client, table,
            async (c) => (await c.query<{ n: number }>(`UPDATE "${s}".counters SET n = n + 1 WHERE aggregate = $1 RETURNING n`, [agg])).rows[0]?.n ?? 0,
            (n) => [{ aggregateKey: agg, eventId: `${agg}#${n}`, payload: { seq: n } }],
          );
        }
      } finally {
        client.release();
      }
    };

    const relays = [0, 1].map(() => new OutboxRelay({ pool: db, table, topic, bootstrap, batchSize: 7 }));
    await Promise.all(relays.map((r) => r.start()));
    const stop = new AbortController();
    try {
      const running = relays.map((r) => r.run(stop.signal, 20));
      await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
      for (let deadline = Date.now() + 60_000; (await pendingCount(db, table)) > 0; ) {
        if (Date.now() > deadline) assert.fail('relays did not drain the outbox within 60 s');
        await new Promise((r) => setTimeout(r, 50));
      }
      stop.abort();
      const sent = await Promise.all(running);
      console.log(`two relays: relay A marked ${sent[0]}, relay B marked ${sent[1]}`);
      assert.equal((sent[0] ?? 0) + (sent[1] ?? 0), WRITERS * PER_WRITER);
    } finally {
      stop.abort();
      await Promise.all(relays.map((r) => r.stop()));
    }

    const got = published(await readTopic(bootstrap, topic));
    assert.equal(got.length, WRITERS * PER_WRITER, 'no duplicates in the normal case');
    assert.equal(counts(got).size, WRITERS * PER_WRITER);
    for (const [key, seqs] of byKey(got)) {
      assert.deepEqual(seqs, Array.from({ length: seqs.length }, (_, i) => i + 1), `aggregate ${key} published in order`);
    }
  });
});

test('onceflow outbox relay --once publishes the pending rows and exits', async () => {
  const { bootstrap } = testCluster();
  const topic = uniqueName('outbox-cli');
  await createTopics(bootstrap, [{ name: topic, partitions: 1 }]);
  await withSchema(db, 'outbox', async (s) => {
    const table = `${s}.outbox`;
    await db.query(`CREATE TABLE "${s}".orders (id text PRIMARY KEY, aggregate text NOT NULL)`);
    const run = (args: string[]) => {
      const program = new Command('onceflow').exitOverride();
      registerOutbox(program);
      return program.parseAsync(['node', 'onceflow', 'outbox', ...args]);
    };
    await run(['init', '--table', table, '--pg-url', PG_URL]);
    await placeOrders(s, table, Array.from({ length: 5 }, (_, i) => ({ aggregateKey: 'k', eventId: `c${i}`, payload: { seq: i + 1 } })));
    await run(['relay', '--table', table, '--topic', topic, '--bootstrap', bootstrap, '--pg-url', PG_URL, '--batch', '2', '--once']);
    assert.equal(await pendingCount(db, table), 0);
    const got = published(await readTopic(bootstrap, topic));
    assert.deepEqual(got.map((p) => p.eventId), ['c0', 'c1', 'c2', 'c3', 'c4']);
    await assert.rejects(run(['relay', '--table', table, '--topic', topic, '--bootstrap', bootstrap, '--batch', '0', '--once']), /--batch must be a positive integer/);
  });
});
