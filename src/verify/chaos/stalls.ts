import { setTimeout as sleep } from 'node:timers/promises';
import type { ChaosCluster } from './cluster.ts';
import { spreadOverReplicas, type FaultScope } from './fault-scope.ts';
import type { FaultEvent } from './schedule.ts';

/** The workers' default session timeout (runtime/worker/config.ts): a long stall outlasts it, a short one does not. */
const SESSION_TIMEOUT_MS = 10_000;

export interface Stalls {
  readonly events: readonly FaultEvent[];
  readonly beyondSessionTimeout: number;
}

/**
 * Every connection of a live replica (and any it opens meanwhile) forwards nothing at the proxies for a
 * while; the sockets stay open, so the worker notices only through its own timeouts.
 */
export function scheduleStalls(scope: FaultScope, count: number): Stalls {
  const { timeline, cluster, appId, log } = scope;
  let beyondSessionTimeout = 0;
  const events = spreadOverReplicas(scope, count, async (index, instance) => {
    const clientId = `${appId}-${instance}`;
    // Every other stall outlasts the session timeout: the group moves the worker's partitions while it still holds an open transaction.
    const long = index % 2 === 1;
    const stallMs = long ? SESSION_TIMEOUT_MS + 2_000 + Math.floor(timeline.random() * 3_000) : 2_000 + Math.floor(timeline.random() * 4_000);
    if (long) beyondSessionTimeout++;
    const connections = cluster.multiBroker.proxies.reduce((open, proxy) => open + proxy.stall(stallMs, (connection) => connection.clientId === clientId), 0);
    log(`stall ${index + 1}/${count}: the connections of ${instance} (${connections} open now, and any it opens meanwhile) forward nothing for ${stallMs} ms${long ? ' (beyond the session timeout)' : ''}`);
  });
  return {
    events,
    get beyondSessionTimeout() {
      return beyondSessionTimeout;
    },
  };
}

/** Until every stall ordered so far has ended (at once on a cluster without proxies). */
export async function stallsEnded(cluster: ChaosCluster): Promise<void> {
  await sleep(Math.max(0, ...cluster.proxies.map((proxy) => proxy.stalledUntil - Date.now())));
}
