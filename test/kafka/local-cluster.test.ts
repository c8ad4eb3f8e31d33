import assert from 'node:assert/strict';
import { test } from 'node:test';
import { brokerProperties, newClusterId } from '../../src/kafka/local-cluster.ts';

test('the single-node broker is configured for transactions with replication factor 1', () => {
  const props = brokerProperties({ brokerPort: 19092, controllerPort: 19093, dataDir: '/tmp/x' });
  for (const line of [
    'process.roles=broker,controller',
    'controller.quorum.voters=1@127.0.0.1:19093',
    'listeners=PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093',
    'transaction.state.log.replication.factor=1',
    'transaction.state.log.min.isr=1',
    'offsets.topic.replication.factor=1',
    'group.initial.rebalance.delay.ms=0',
    'auto.create.topics.enable=false',
  ]) {
    assert.ok(props.split('\n').includes(line), `missing: ${line}`);
  }
});

test('cluster ids are 22 base64url characters and never start with a dash the storage tool would take for an option', () => {
  for (let i = 0; i < 5_000; i++) {
    const id = newClusterId();
    assert.match(id, /^[A-Za-z0-9_][A-Za-z0-9_-]{21}$/);
  }
});
