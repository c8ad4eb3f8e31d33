import type { ClientOptions } from '../../kafka/admin.ts';
import { describeKafkaError } from '../transaction/kafka-errors.ts';
import type { ClientSupplier, GroupProtocolAccess } from '../base/client-supplier.ts';
import type { ResolvedWorkerConfig } from '../base/config.ts';
import type { WorkerEvent } from '../base/worker-events.ts';

export interface GroupProtocol {
  readonly protocol: 'classic' | 'consumer';
  /** The classic protocol's client-side strategy, or the consumer protocol's broker-side assignor. */
  readonly assignor: 'cooperative-sticky' | 'range' | 'uniform';
}

/**
 * The protocol the worker's consumer joins its group with. A joining topology needs partition N of each
 * co-partitioned topic on one worker: under the classic protocol only the eager range assignor promises
 * that, and every rebalance then revokes every task; the consumer protocol's range assignor (broker side)
 * promises it too and is sticky and incremental, so a rebalance moves only the partitions that change hands.
 * A topology without joins keeps classic cooperative-sticky under `auto`: it loses nothing there.
 */
export async function chooseGroupProtocol(config: Pick<ResolvedWorkerConfig, 'groupProtocol'>, copartitioned: boolean, access: GroupProtocolAccess | string | undefined): Promise<GroupProtocol & { readonly reason: string }> {
  const classic = { protocol: 'classic', assignor: copartitioned ? 'range' : 'cooperative-sticky' } as const;
  const consumer = { protocol: 'consumer', assignor: copartitioned ? 'range' : 'uniform' } as const;
  if (config.groupProtocol === 'classic') return { ...classic, reason: 'groupProtocol classic' };
  if (config.groupProtocol === 'consumer') return { ...consumer, reason: 'groupProtocol consumer' };
  if (!copartitioned) return { ...classic, reason: 'groupProtocol auto: the topology does not join' };
  if (access === undefined || typeof access === 'string') return { ...classic, reason: `groupProtocol auto: cannot ask the broker whether it serves the consumer protocol (${access ?? 'the client supplier cannot'})` };
  try {
    if (await access.servesConsumerProtocol()) return { ...consumer, reason: 'groupProtocol auto: the topology joins and the broker serves the consumer protocol' };
    return { ...classic, reason: 'groupProtocol auto: the broker does not serve the consumer protocol (Kafka < 4.0)' };
  } catch (e) {
    return { ...classic, reason: `groupProtocol auto: asking the broker failed (${describeKafkaError(e)})` };
  }
}

/**
 * Under the consumer protocol the broker alone times a member's session out (45 s unless the group says
 * otherwise, and never below the broker's `group.consumer.min.session.timeout.ms`, 45 s by default): the
 * worker sets its group's `consumer.session.timeout.ms` to its own sessionTimeoutMs, with a heartbeat a fifth
 * of it where the broker's minimum heartbeat allows, and says so when the broker refuses.
 */
export async function applyGroupSessionTimeout(config: Pick<ResolvedWorkerConfig, 'appId' | 'sessionTimeoutMs'>, access: GroupProtocolAccess | string | undefined, emit: (e: WorkerEvent) => void): Promise<void> {
  const requestedMs = config.sessionTimeoutMs;
  if (access === undefined || typeof access === 'string') {
    emit({ type: 'group-session-timeout', requestedMs, applied: false, reason: access ?? 'the client supplier cannot set group configs' });
    return;
  }
  const session = { 'consumer.session.timeout.ms': String(requestedMs) };
  let refusal: unknown;
  for (const settings of [{ ...session, 'consumer.heartbeat.interval.ms': String(Math.max(1, Math.floor(requestedMs / 5))) }, session]) {
    try {
      await access.setGroupConfigs(config.appId, settings);
      emit({ type: 'group-session-timeout', requestedMs, applied: true });
      return;
    } catch (e) {
      refusal = e;
    }
  }
  emit({ type: 'group-session-timeout', requestedMs, applied: false, reason: describeKafkaError(refusal) });
}

/** The librdkafka options that select `choice`: the classic protocol's session settings are the client's, the consumer protocol's the broker's. */
export function groupProtocolOptions(choice: GroupProtocol, sessionTimeoutMs: number): ClientOptions {
  if (choice.protocol === 'consumer') return { 'group.protocol': 'consumer', 'group.remote.assignor': choice.assignor };
  return {
    'partition.assignment.strategy': choice.assignor,
    'session.timeout.ms': sessionTimeoutMs,
    'heartbeat.interval.ms': Math.max(100, Math.floor(sessionTimeoutMs / 5)),
  };
}

/** The protocol the worker's consumer joins with, said in a `group-protocol` event; under the consumer protocol the group's session timeout set first. */
export async function prepareGroupProtocol(config: ResolvedWorkerConfig, copartitioned: boolean, clients: Pick<ClientSupplier, 'groupProtocol'>, emit: (e: WorkerEvent) => void): Promise<GroupProtocol> {
  const access = clients.groupProtocol?.(config.bootstrap, config.kafka);
  const choice = await chooseGroupProtocol(config, copartitioned, access);
  emit({ type: 'group-protocol', protocol: choice.protocol, assignor: choice.assignor, reason: choice.reason });
  if (choice.protocol === 'consumer') await applyGroupSessionTimeout(config, access, emit);
  return { protocol: choice.protocol, assignor: choice.assignor };
}
