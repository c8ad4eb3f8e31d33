import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runChaos } from '../../src/verify/chaos/run-chaos.ts';
import { assertExactlyOnce, base, threeBrokerCluster } from '../support/three-broker-chaos.ts';

/**
 * Exactly-once across network stalls: a three-node cluster of its own (replication 3, min ISR 2) with a fault
 * proxy in front of each node. The suite's single broker is not used: the stall must not hold up every other
 * test's connections. Broker kills are broker-kills.test.ts, on a cluster of their own.
 */
const cluster = threeBrokerCluster();

test("a worker's connections stalled for seconds, once beyond the session timeout: no duplicate, no loss, end marker readable", async () => {
  const result = await runChaos({ ...base, seed: 22, cluster: cluster(), stalls: 2 });
  assert.equal(result.stallsBeyondSessionTimeout, 1);
  assertExactlyOnce(result);
});
