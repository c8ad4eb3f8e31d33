import { existsSync } from 'node:fs';

/**
 * Where the chaos harness may kill a worker: each phase is a point of the transaction protocol whose
 * crash must lose and duplicate nothing. Production runs the no-op hook; the CLI builds a killing one
 * from ONCEFLOW_CHAOS_KILL_AT, so the runtime itself never reads the environment for it.
 */
export const CHAOS_PHASES = ['before-produce', 'after-produce', 'after-send-offsets', 'during-commit'] as const;
export type ChaosPhase = (typeof CHAOS_PHASES)[number];

/** What the worker knows of the open transaction when it passes a phase. */
export interface PhasePass {
  /** Records the transaction sent to output topics (sinks and dead-letter topics; not repartition or changelog topics). */
  readonly outputRecords: number;
}

export type FaultHook = (phase: ChaosPhase, pass: PhasePass) => void;

export const noFaults: FaultHook = () => undefined;

export interface KillSpec {
  readonly phase: ChaosPhase;
  /** Die the n-th time the phase is passed (counting only passes with outputs, with `withOutputs`). */
  readonly n: number;
  /**
   * Count only passes whose transaction sent records to an output topic. Other passes can carry only
   * records between internal topics, whose replay a dedupe or version guard drops unseen: a death there
   * shows nothing downstream, under any guarantee.
   */
  readonly withOutputs: boolean;
  /** Passes count only once this file exists: the harness creates it at the moment it wants the kill. */
  readonly armFile: string | undefined;
}

/** `<phase>:<n>[:outputs][@<arm file>]`; undefined when unset or not a known phase (no faults then). */
export function parseKillSpec(spec: string | undefined): KillSpec | undefined {
  if (!spec) return undefined;
  const at = spec.indexOf('@');
  const [phase, n, qualifier] = (at < 0 ? spec : spec.slice(0, at)).split(':');
  if (!CHAOS_PHASES.includes(phase as ChaosPhase)) return undefined;
  return { phase: phase as ChaosPhase, n: Math.max(1, Number(n) || 1), withOutputs: qualifier === 'outputs', armFile: at < 0 ? undefined : spec.slice(at + 1) };
}

const sigkillSelf = (): void => {
  process.kill(process.pid, 'SIGKILL');
};

/** `spec` is `<phase>:<n>[:outputs][@<arm file>]`: SIGKILL this process the n-th time it passes the phase. Unset or unknown: no faults. */
export function killAt(spec: string | undefined, kill: () => void = sigkillSelf): FaultHook {
  const parsed = parseKillSpec(spec);
  if (!parsed) return noFaults;
  let remaining = parsed.n;
  return (reached, pass) => {
    if (reached !== parsed.phase) return;
    if (parsed.withOutputs && pass.outputRecords === 0) return;
    if (parsed.armFile !== undefined && !existsSync(parsed.armFile)) return;
    if (--remaining > 0) return;
    // During the commit the kill must land while EndTxn is in flight, not before it is sent.
    if (reached === 'during-commit') setImmediate(kill);
    else kill();
  };
}
