import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { BrokerCluster } from '../../src/kafka/broker-cluster.ts';
import { projectRoot } from '../../src/kafka/paths.ts';
import type { ChaosResult } from '../../src/verify/chaos/result.ts';

/** Starts a three-node cluster with fault proxies before the file's tests and stops it after; the getter gives it. */
export function threeBrokerCluster(): () => BrokerCluster {
  let cluster: BrokerCluster | undefined;
  before(async () => {
    cluster = await BrokerCluster.start({ dir: join(projectRoot(), '.onceflow', `broker-faults-${process.pid}`), brokers: 3, proxies: true, fresh: true });
  });
  after(async () => {
    await cluster?.stop();
  });
  return () => {
    if (!cluster) throw new Error('the three-broker cluster did not start');
    return cluster;
  };
}

// The harness's lines (and a stuck worker's last stderr lines) land in the test output.
export const base = { records: 2_000, replicas: 2, kills: 0, feedMs: 8_000, log: (line: string) => console.log(`# ${line}`) } as const;

export function assertExactlyOnce(result: ChaosResult): void {
  console.log(`# ${JSON.stringify({ ...result, verify: undefined })}`);
  assert.deepEqual(
    {
      duplicates: result.duplicates,
      lost: result.lost,
      aggregateMismatches: result.aggregateMismatches,
      live: result.liveReader,
      endMarkerReadable: result.endMarkerMs !== null,
    },
    { duplicates: 0, lost: 0, aggregateMismatches: 0, live: { ...result.liveReader, duplicates: 0, outOfOrder: 0, aborted: 0, skipped: 0 }, endMarkerReadable: true },
    JSON.stringify({ verify: result.verify.examples, live: result.liveReaderExamples }),
  );
  assert.ok(result.verify.aggregateKeys > 0, 'customer totals were compared');
  assert.ok(result.liveReader.records > 0, 'the live reader saw output during the run');
}
