import assert from 'node:assert/strict';
import { test } from 'node:test';
import { brokerProperties, newClusterId } from '../../src/kafka/broker-config.ts';

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

test('the secure broker listens SASL_SSL with SCRAM and the KRaft authorizer, its controller PLAINTEXT on 127.0.0.1', () => {
  const security = { keystore: '/k.p12', keystorePassword: 'kp', caLocation: '/ca.crt', adminUser: 'admin', adminPassword: 'ap' };
  const props = brokerProperties({ brokerPort: 19092, controllerPort: 19093, dataDir: '/tmp/x', security }).split('\n');
  for (const line of [
    'listeners=SASL_SSL://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093',
    'inter.broker.listener.name=SASL_SSL',
    'listener.security.protocol.map=SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT',
    'sasl.enabled.mechanisms=SCRAM-SHA-512',
    'authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer',
    'super.users=User:admin;User:ANONYMOUS',
    'allow.everyone.if.no.acl.found=false',
    'transaction.state.log.replication.factor=1',
  ]) {
    assert.ok(props.includes(line), `missing: ${line}`);
  }
});
