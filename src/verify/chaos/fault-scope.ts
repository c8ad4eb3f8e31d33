import type { WorkerProcess } from '../worker-process.ts';
import type { ChaosCluster } from './cluster.ts';
import type { Replicas } from './replicas.ts';
import { spreadOverFeed, type FaultEvent, type FaultTimeline } from './schedule.ts';

/** What a fault kind may see and touch while it schedules and runs its faults. */
export interface FaultScope {
  readonly timeline: FaultTimeline;
  readonly replicas: Replicas;
  readonly cluster: ChaosCluster;
  readonly appId: string;
  readonly outputTopic: string;
  readonly log: (line: string) => void;
}

/**
 * `count` faults spread over the feed, each aimed at a live replica drawn when it is due (the group changes
 * meanwhile); with no replica live then, that fault is skipped.
 */
export function spreadOverReplicas(
  scope: FaultScope,
  count: number,
  fault: (index: number, instance: string, worker: WorkerProcess) => Promise<void>,
): FaultEvent[] {
  const { timeline, replicas } = scope;
  return spreadOverFeed(timeline, count, (index) => async () => {
    const drawn = replicas.draw(timeline.random);
    if (drawn) await fault(index, ...drawn);
  });
}
