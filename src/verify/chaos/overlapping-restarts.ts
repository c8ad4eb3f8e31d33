import { setTimeout as sleep } from 'node:timers/promises';
import { spreadOverReplicas, type FaultScope } from './fault-scope.ts';
import type { FaultEvent } from './schedule.ts';

/**
 * Replacements the way rolling updates make them: the new process with a live replica's instance id starts
 * first, and the old one is stopped (SIGTERM) 0.5 to 3 s later, so that for a while both run.
 */
export function scheduleOverlappingRestarts(scope: FaultScope, count: number): FaultEvent[] {
  const { timeline, replicas, log } = scope;
  return spreadOverReplicas(scope, count, async (index, instance, old) => {
    const replacement = replicas.spawn(instance);
    const overlapMs = 500 + Math.floor(timeline.random() * 2500);
    log(`overlapping restart ${index + 1}: new ${instance} started, old one stopped ${overlapMs} ms later`);
    await sleep(overlapMs);
    await replicas.stop(old);
    replicas.makeLive(instance, replacement);
  });
}
