import { randomBytes } from 'node:crypto';
import { secureListenerProperties, type BrokerSecurity } from './security.ts';

export function log4jConfig(file: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="WARN">
  <Appenders>
    <File name="file" fileName="${file}" append="true">
      <PatternLayout pattern="[%d] %p %m (%c)%n"/>
    </File>
  </Appenders>
  <Loggers>
    <Logger name="kafka" level="INFO"/>
    <Logger name="org.apache.kafka" level="WARN"/>
    <Logger name="state.change.logger" level="WARN"/>
    <Root level="WARN"><AppenderRef ref="file"/></Root>
  </Loggers>
</Configuration>
`;
}

/** A KRaft cluster id: 22 base64url characters, never starting with '-', which the storage tool would read as an option (Kafka's own Uuid avoids it too). */
export function newClusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url').slice(0, 22);
    if (!id.startsWith('-')) return id;
  }
}

/**
 * One node of a multi-node KRaft cluster (broker-cluster.ts). Clients use the CLIENT listener, which may
 * advertise another port (a fault proxy in front of it); replication uses the INTERNAL listener, never proxied,
 * so that a stalled client connection does not stall the followers too.
 */
export interface ClusterNodeSettings {
  readonly nodeId: number;
  readonly clusterId: string;
  /** `id@host:port` of every controller. */
  readonly quorumVoters: string;
  readonly internalPort: number;
  /** The port clients are told to use (the proxy's); the broker's own port when nothing is in front. */
  readonly advertisedPort: number;
  readonly replicationFactor: number;
  readonly minInsyncReplicas: number;
}

/** Single-node KRaft settings: replication 1 everywhere, small internal topics so start-up stays quick; `node` makes it one node of several. */
export function brokerProperties(opts: { brokerPort: number; controllerPort: number; dataDir: string; security?: BrokerSecurity; node?: ClusterNodeSettings }): string {
  const listener = opts.security ? 'SASL_SSL' : 'PLAINTEXT';
  const node = opts.node;
  const replication = node?.replicationFactor ?? 1;
  const minIsr = node?.minInsyncReplicas ?? 1;
  const listeners = node
    ? [
        `listeners=CLIENT://127.0.0.1:${opts.brokerPort},INTERNAL://127.0.0.1:${node.internalPort},CONTROLLER://127.0.0.1:${opts.controllerPort}`,
        `advertised.listeners=CLIENT://127.0.0.1:${node.advertisedPort},INTERNAL://127.0.0.1:${node.internalPort}`,
        'controller.listener.names=CONTROLLER',
        'inter.broker.listener.name=INTERNAL',
        'listener.security.protocol.map=CLIENT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT',
      ]
    : [
        `listeners=${listener}://127.0.0.1:${opts.brokerPort},CONTROLLER://127.0.0.1:${opts.controllerPort}`,
        `advertised.listeners=${listener}://127.0.0.1:${opts.brokerPort}`,
        'controller.listener.names=CONTROLLER',
        `inter.broker.listener.name=${listener}`,
        `listener.security.protocol.map=${listener}:${listener},CONTROLLER:PLAINTEXT`,
      ];
  return [
    'process.roles=broker,controller',
    `node.id=${node?.nodeId ?? 1}`,
    `controller.quorum.voters=${node?.quorumVoters ?? `1@127.0.0.1:${opts.controllerPort}`}`,
    ...listeners,
    ...(opts.security ? secureListenerProperties(opts.security) : []),
    `log.dirs=${opts.dataDir}`,
    'num.partitions=1',
    // A typo'd topic must surface as an error, not as a silently created empty topic.
    'auto.create.topics.enable=false',
    `default.replication.factor=${replication}`,
    `min.insync.replicas=${minIsr}`,
    `offsets.topic.replication.factor=${replication}`,
    'offsets.topic.num.partitions=3',
    `transaction.state.log.replication.factor=${replication}`,
    `transaction.state.log.min.isr=${minIsr}`,
    'transaction.state.log.num.partitions=3',
    'group.initial.rebalance.delay.ms=0',
    // Lets tests evict a paused (zombie) member quickly.
    'group.min.session.timeout.ms=1000',
    // The same for groups under the consumer protocol (KIP-848), whose session timeout the broker alone
    // enforces (45 s by default, and no group may go below the minimum): a group sets its own within these.
    'group.consumer.min.session.timeout.ms=1000',
    'group.consumer.session.timeout.ms=10000',
    'group.consumer.min.heartbeat.interval.ms=200',
    'group.consumer.heartbeat.interval.ms=1000',
    'log.segment.bytes=67108864',
    // Every few seconds, as a busy production broker may: a record older than its topic's retention is
    // deleted soon after it is written, so a test of old (backfilled) timestamps sees what a user would.
    'log.retention.check.interval.ms=5000',
    'transaction.abort.timed.out.transaction.cleanup.interval.ms=5000',
    '',
  ].join('\n');
}
