import { setTimeout as sleep } from 'node:timers/promises';
import type { WorkerProcess } from '../worker-process.ts';
import { spreadOverReplicas, type FaultScope } from './fault-scope.ts';
import type { FaultEvent } from './schedule.ts';

export interface DuplicateInstances {
  readonly events: readonly FaultEvent[];
  /** Of the two processes of each event, the one that stopped first did so with DUPLICATE_INSTANCE_ID (one per event is expected). */
  readonly steppedBack: number;
}

/**
 * Two live processes with one instance id, alternately a second one beside a live replica, and two at once
 * in place of a SIGKILLed one. One of the two must step back on its own, and no record may be lost.
 */
export function scheduleDuplicateInstances(scope: FaultScope, count: number): DuplicateInstances {
  const { replicas, log } = scope;
  let steppedBack = 0;
  const events = spreadOverReplicas(scope, count, async (index, instance, victim) => {
    let pair: [WorkerProcess, WorkerProcess];
    if (index % 2 === 0) {
      log(`duplicate instance ${index + 1}: a second ${instance} started beside the live one`);
      pair = [victim, replicas.spawn(instance)];
    } else {
      // Both wait out the dead member, then start together: the race between two fresh producers.
      log(`duplicate instance ${index + 1}: ${instance} SIGKILLed, two processes started in its place`);
      await replicas.kill(victim);
      pair = [replicas.spawn(instance), replicas.spawn(instance)];
    }
    for (const member of pair) replicas.expectExit(member);
    const [a, b] = pair;
    const first = await Promise.race([a.exit().then(() => a), b.exit().then(() => b), sleep(90_000).then(() => undefined)]);
    if (first) {
      if (first.stderr.some((line) => line.includes('DUPLICATE_INSTANCE_ID'))) steppedBack++;
      replicas.makeLive(instance, first === a ? b : a);
    } else {
      log(`duplicate instance ${index + 1}: both ${instance} processes still run after 90 s`);
      replicas.makeLive(instance, b);
    }
  });
  return {
    events,
    get steppedBack() {
      return steppedBack;
    },
  };
}
