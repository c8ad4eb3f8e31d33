import type { FaultScope } from './fault-scope.ts';
import { atShareOfFeed, type FaultEvent } from './schedule.ts';

export interface Scaling {
  readonly events: readonly FaultEvent[];
  readonly scaled: boolean;
  /** The most replicas that ran at once. */
  readonly peakReplicas: number;
}

/** `steps` replicas added at 30 % of the feed and as many removed again (the oldest first) at 70 %. */
export function scheduleScaling(scope: FaultScope, steps: number): Scaling {
  const { timeline, replicas, log } = scope;
  let scaled = false;
  let peakReplicas = replicas.size;
  const events = Array.from({ length: steps }, () => [
    atShareOfFeed(timeline, 0.3, async () => {
      const instance = replicas.newInstanceId();
      log(`scale up: ${instance}`);
      replicas.startLive(instance);
      peakReplicas = Math.max(peakReplicas, replicas.size);
      scaled = true;
    }),
    atShareOfFeed(timeline, 0.7, async () => {
      const [instance, worker] = replicas.oldest()!;
      log(`scale down: SIGTERM ${instance}`);
      await replicas.retire(instance, worker);
    }),
  ]).flat();
  return {
    events,
    get scaled() {
      return scaled;
    },
    get peakReplicas() {
      return peakReplicas;
    },
  };
}
