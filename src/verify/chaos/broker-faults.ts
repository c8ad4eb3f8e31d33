import { BROKER_KILL_TARGETS, type BrokerKillTarget } from './options.ts';
import type { FaultScope } from './fault-scope.ts';
import { spreadOverFeed, type FaultEvent } from './schedule.ts';

/** Broker restarts: each SIGKILLs a broker (on several nodes, each in turn) and starts it again. */
export function scheduleBrokerRestarts(scope: FaultScope, count: number): FaultEvent[] {
  return spreadOverFeed(scope.timeline, count, (index) => () => scope.cluster.restartBroker(index, scope.log));
}

export interface BrokerKills {
  readonly events: readonly FaultEvent[];
  /** Per kill, in the order they happened: what it aimed at and which node that was. */
  readonly targets: readonly { readonly target: BrokerKillTarget; readonly nodeId: number }[];
}

/**
 * kill -9 and restart of the node that plays a part for the run right then, in turn (`order`, by default
 * BROKER_KILL_TARGETS): a replica's transaction coordinator, the group coordinator, an output partition's leader.
 */
export function scheduleBrokerKills(scope: FaultScope, count: number, order: readonly BrokerKillTarget[] | undefined): BrokerKills {
  const { timeline, cluster, log } = scope;
  const targets: { target: BrokerKillTarget; nodeId: number }[] = [];
  const events = spreadOverFeed(timeline, count, (index) => async () => {
    const inTurn = order?.length ? order : BROKER_KILL_TARGETS;
    const target = inTurn[index % inTurn.length]!;
    const { nodeId, role } = await findTarget(scope, target);
    targets.push({ target, nodeId });
    const killedAt = Date.now();
    await cluster.multiBroker.restart(nodeId);
    log(`broker kill ${index + 1}/${count}: kill -9 node ${nodeId} (${role}), answering again after ${Date.now() - killedAt} ms`);
  });
  return { events, targets };
}

/** The node that is the target now, and its role in words. */
async function findTarget(scope: FaultScope, target: BrokerKillTarget): Promise<{ nodeId: number; role: string }> {
  const { timeline, replicas, cluster, appId, outputTopic } = scope;
  if (target === 'transaction-coordinator') {
    const instance = replicas.draw(timeline.random)?.[0] ?? 'r0';
    return { nodeId: await cluster.multiBroker.transactionCoordinator(`${appId}-${instance}`), role: `the transaction coordinator of ${instance}` };
  }
  if (target === 'group-coordinator') return { nodeId: await cluster.multiBroker.groupCoordinator(appId), role: `the coordinator of group ${appId}` };
  const leaders = [...(await cluster.multiBroker.partitionLeaders(outputTopic))];
  const [partition, leader] = leaders[Math.floor(timeline.random() * leaders.length)] ?? [0, 1];
  return { nodeId: leader, role: `the leader of ${outputTopic}/${partition}` };
}
