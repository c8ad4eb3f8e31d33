import { CHAOS_PHASES, type ChaosPhase } from '../../runtime/base/faults.ts';
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
export function scheduleWorkerKills(scope: FaultScope, count: number, phase: ChaosPhase | undefined): WorkerKills {
  const { timeline, replicas, log } = scope;
  const killPhases: Record<string, number> = { random: 0, ...Object.fromEntries(CHAOS_PHASES.map((p) => [p, 0])) };
  // Kills are drawn at random times, so they are numbered as they happen, not as they were drawn.
  let killsDone = 0;
  const events = spreadOverReplicas(scope, count, async (index, victim, worker) => {
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
      // It never reached that phase (no records for it): it is replaced by a plain replica all the same.
      await replicas.kill(restarted);
    }
    replicas.startLive(victim);
  });
  return { events, killPhases };
}
