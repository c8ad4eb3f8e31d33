import assert from 'node:assert/strict';
import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { compile } from '../../src/graph/index.ts';
import { stringSerde } from '../../src/serdes/index.ts';
import { testCluster, uniqueName } from './cluster.ts';

/** String records from a fresh input topic through `mapValues(map)` to a fresh output topic, compiled, with its dead-letter topic's name. */
export function mapValuesApp(prefix: string, map: (value: string | null) => string) {
  const { bootstrap } = testCluster();
  const input = uniqueName(`${prefix}-in`);
  const output = uniqueName(`${prefix}-out`);
  const appId = uniqueName(`${prefix}-app`);
  const app = new TopologyBuilder({ appId });
  app.stream(input, { key: stringSerde, value: stringSerde }).mapValues(map).to(output, { key: stringSerde, value: stringSerde });
  const topology = compile(app);
  const dlq = topology.topics.find((t) => t.kind === 'dead-letter')?.name;
  assert.ok(dlq);
  return { bootstrap, input, output, appId, topology, dlq };
}
