import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { TopologyBuilder } from '../../../src/dsl/topology-builder.ts';
import { compile } from '../../../src/graph/compile.ts';
import { fingerprintOf } from '../../../src/graph/fingerprint.ts';
import type { RecordedTopology, TopologyRecordAccess } from '../../../src/kafka/topology-record.ts';
import type { WorkerEvent } from '../../../src/runtime/base/worker-events.ts';
import { checkUpgrade, ResetStateUnknownStoreError, TopologyIncompatibleError, type UpgradeGuardParts } from '../../../src/runtime/worker/upgrade-guard.ts';
import { jsonSerde, stringSerde } from '../../../src/serdes/index.ts';

const stateDir = mkdtempSync(join(tmpdir(), 'onceflow-guard-'));
after(() => rmSync(stateDir, { recursive: true, force: true }));

const counting = (store: string) => {
  const app = new TopologyBuilder({ appId: 'shop' });
  app.stream('orders', { key: stringSerde, value: stringSerde }).groupByKey().count({ store }).toStream().to('out', { key: stringSerde, value: jsonSerde<number>() });
  return compile(app);
};

/** The record topic as a variable; deleted topics are remembered. */
function memoryRecords(initial?: RecordedTopology): TopologyRecordAccess & { deleted: string[] } {
  let latest = initial;
  const deleted: string[] = [];
  return { topic: 'shop-topology', deleted, read: async () => latest, write: async (r) => void (latest = r), deleteTopics: async (names) => void deleted.push(...names) };
}

function parts(store: string, records: TopologyRecordAccess, resetStores: readonly string[] = []): UpgradeGuardParts & { events: WorkerEvent[] } {
  const events: WorkerEvent[] = [];
  const topology = counting(store);
  return { config: { appId: 'shop', instanceId: 'a', stateDir }, transactionalId: 'shop-a', records, topicConfigs: undefined, fingerprint: (p) => fingerprintOf(topology, p), resetStores: new Set(resetStores), emit: (e) => void events.push(e), events };
}

const recorded = (store: string): RecordedTopology => ({ fingerprint: fingerprintOf(counting(store)), recordedAt: '2026-01-01T00:00:00.000Z', by: 'shop-old' });

test('nothing recorded: a first deploy, recorded as it starts', async () => {
  const guard = parts('counts', memoryRecords());
  const record = await checkUpgrade(guard, new Map());
  assert.deepEqual(record?.fingerprint.stores.map((s) => s.name), ['counts']);
  assert.deepEqual(guard.events.filter((e) => e.type === 'topology-checked'), [{ type: 'topology-checked', first: true, changes: [] }]);
});

test('the same topology: nothing to record again', async () => {
  assert.equal(await checkUpgrade(parts('counts', memoryRecords(recorded('counts'))), new Map()), undefined);
});

test('a renamed store is refused with TOPOLOGY_INCOMPATIBLE, nothing deleted', async () => {
  const records = memoryRecords(recorded('counts'));
  await assert.rejects(checkUpgrade(parts('totals', records), new Map()), (e: unknown) => {
    assert.ok(e instanceof TopologyIncompatibleError);
    assert.equal(e.code, 'TOPOLOGY_INCOMPATIBLE');
    assert.match(e.message, /breaking: store counts renamed to totals/);
    return true;
  });
  assert.deepEqual(records.deleted, []);
});

test('--reset-state of the renamed store resets it: both changelogs deleted, the local task directories of its sub-topology removed', async () => {
  const records = memoryRecords(recorded('counts'));
  const task = join(stateDir, 'shop', 'a', '0_1');
  const otherInstance = join(stateDir, 'shop', 'b', '0_1');
  mkdirSync(task, { recursive: true });
  mkdirSync(otherInstance, { recursive: true });
  const guard = parts('totals', records, ['totals']);
  const record = await checkUpgrade(guard, new Map());
  assert.deepEqual(record?.fingerprint.stores.map((s) => s.name), ['totals']);
  assert.deepEqual(records.deleted, ['shop-totals-changelog', 'shop-counts-changelog']);
  assert.equal(existsSync(task), false);
  assert.equal(existsSync(otherInstance), true, "another replica's directory is its own");
  assert.deepEqual(guard.events.filter((e) => e.type === 'store-reset').map((e) => e.type === 'store-reset' && e.store), ['totals']);
});

test('--reset-state that no change needs resets nothing; a name no topology has is refused', async () => {
  const records = memoryRecords(recorded('counts'));
  await checkUpgrade(parts('counts', records, ['counts']), new Map());
  assert.deepEqual(records.deleted, []);
  await assert.rejects(checkUpgrade(parts('counts', records, ['typo']), new Map()), ResetStateUnknownStoreError);
});
