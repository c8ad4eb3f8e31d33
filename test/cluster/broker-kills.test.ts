import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runChaos } from '../../src/verify/chaos/run-chaos.ts';
import { assertExactlyOnce, base, threeBrokerCluster } from '../support/three-broker-chaos.ts';

/**
 * Exactly-once across broker failover: a three-node cluster of its own (replication 3, min ISR 2) with a
 * fault proxy in front of each node. The suite's single broker is not used: the kills must not disturb every
 * other test's connections. Should a worker stop making progress after the kills, the harness prints its last
 * stderr lines (`producer-retry`, `seek-failed` and the like) beside the lag that timed out.
 */
const cluster = threeBrokerCluster();

test('kill -9 of an output partition leader, then of a worker\'s transaction coordinator, mid-stream: no duplicate, no loss, end marker readable', async () => {
  const result = await runChaos({ ...base, seed: 23, cluster: cluster(), brokerKills: 2, brokerKillOrder: ['partition-leader', 'transaction-coordinator'] });
  assert.deepEqual(result.brokerKillTargets.map((k) => k.target).sort(), ['partition-leader', 'transaction-coordinator']);
  assertExactlyOnce(result);
});
