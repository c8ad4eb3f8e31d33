import { CHAOS_PHASES, type ChaosPhase } from '../../runtime/base/faults.ts';
import type { PhaseTrigger } from '../phase-trigger.ts';
import type { WorkerProcess } from '../worker-process.ts';
import type { Replicas } from './replicas.ts';
import { spreadOverReplicas, type FaultScope } from './fault-scope.ts';
import type { FaultEvent } from './schedule.ts';

export interface WorkerKills {
  readonly events: readonly FaultEvent[];
  /** How many kills landed at random moments, and how many inside each transaction phase. */
  readonly killPhases: Record<string, number>;
}

/**
 * SIGKILLs of a live replica, each started again at once. Every other kill (or every one, given `phase`)
 * also has the restarted process kill itself inside a transaction phase, where a random moment seldom lands.
 */
export function scheduleWorkerKills(scope: FaultScope, count: number, phase: ChaosPhase | undefined, trigger?: PhaseTrigger): WorkerKills {
  const { timeline, replicas, log } = scope;
  const killPhases: Record<string, number> = { random: 0, ...Object.fromEntries(CHAOS_PHASES.map((p) => [p, 0])) };
  // Kills are drawn at random times, so they are numbered as they happen, not as they were drawn.
  let killsDone = 0;
  const events = spreadOverReplicas(scope, count, async (index, victim, worker) => {
    if (trigger) {
      if (await killAtPhase(replicas, victim, worker, trigger, log)) {
        killPhases[trigger.phase] = (killPhases[trigger.phase] ?? 0) + 1;
        log(`kill ${++killsDone}/${count}: ${victim} died at ${trigger.phase}; started again`);
      }
      return;
    }
    const phaseToDieAt = phase ?? (index % 2 === 1 ? CHAOS_PHASES[Math.floor(timeline.random() * CHAOS_PHASES.length)] : undefined);
    await replicas.kill(worker);
    killPhases.random = (killPhases.random ?? 0) + 1;
    log(`kill ${++killsDone}/${count}: SIGKILL ${victim}${phaseToDieAt ? `, restarted to die again at ${phaseToDieAt}` : ''}`);
    const restarted = replicas.startLive(victim, phaseToDieAt ? { ONCEFLOW_CHAOS_KILL_AT: `${phaseToDieAt}:${1 + Math.floor(timeline.random() * 5)}` } : {});
    if (!phaseToDieAt) return;
    // Its death at the phase is the harness's doing, not the worker's.
    replicas.expectExit(restarted);
    const died = (await restarted.exitWithin(40_000)) !== undefined;
    if (died) {
      killPhases[phaseToDieAt] = (killPhases[phaseToDieAt] ?? 0) + 1;
    } else {
      log(`${victim} never reached ${phaseToDieAt} within 40 s (no records for it): replaced by a plain replica, no kill counted`);
      await replicas.kill(restarted);
    }
    replicas.startLive(victim);
  });
  return { events, killPhases };
}

/**
 * onlyAtPhase: the victim, busy with the feed, is armed now and dies at its next pass of the phase in a
 * transaction that wrote output; true when it did (it is started again), false when it never got there.
 */
async function killAtPhase(replicas: Replicas, victim: string, worker: WorkerProcess, trigger: PhaseTrigger, log: (line: string) => void): Promise<boolean> {
  const armedAt = Date.now();
  replicas.expectExit(worker);
  trigger.arm(worker);
  if ((await worker.exitWithin(40_000)) === undefined) {
    trigger.disarm(worker);
    replicas.expectRunning(worker);
    log(`${victim} armed but no transaction of it wrote output within 40 s: no kill`);
    return false;
  }
  log(`${victim} died ${Date.now() - armedAt} ms after it was armed`);
  replicas.startLive(victim);
  return true;
}
