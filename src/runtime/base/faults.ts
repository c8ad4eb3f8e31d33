/**
 * Where the chaos harness may kill a worker: each phase is a point of the transaction protocol whose
 * crash must lose and duplicate nothing. Production runs the no-op hook; the CLI builds a killing one
 * from ONCEFLOW_CHAOS_KILL_AT, so the runtime itself never reads the environment for it.
 */
export const CHAOS_PHASES = ['before-produce', 'after-produce', 'after-send-offsets', 'during-commit'] as const;
export type ChaosPhase = (typeof CHAOS_PHASES)[number];

export type FaultHook = (phase: ChaosPhase) => void;

export const noFaults: FaultHook = () => undefined;

/** `spec` is `<phase>:<n>`: SIGKILL this process the n-th time it passes the phase. Unset or unknown: no faults. */
export function killAt(spec: string | undefined): FaultHook {
  if (!spec) return noFaults;
  const [phase, n] = spec.split(':');
  if (!CHAOS_PHASES.includes(phase as ChaosPhase)) return noFaults;
  let remaining = Math.max(1, Number(n) || 1);
  return (reached) => {
    if (reached !== phase) return;
    if (--remaining > 0) return;
    // During the commit the kill must land while EndTxn is in flight, not before it is sent.
    if (reached === 'during-commit') setImmediate(() => process.kill(process.pid, 'SIGKILL'));
    else process.kill(process.pid, 'SIGKILL');
  };
}
