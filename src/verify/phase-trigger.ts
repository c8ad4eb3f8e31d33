import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChaosPhase } from '../runtime/base/faults.ts';
import type { WorkerProcess } from './worker-process.ts';

/**
 * Kills a replica at a named transaction phase at the moment the harness chooses, not at a random
 * point: every replica starts with a kill spec whose arm file does not exist yet, and creating that
 * file makes it SIGKILL itself at its next pass of the phase in a transaction that wrote output.
 */
export class PhaseTrigger {
  readonly #dir = mkdtempSync(join(tmpdir(), 'onceflow-chaos-arm-'));
  readonly #files = new Map<WorkerProcess, string>();
  #spawned = 0;

  constructor(readonly phase: ChaosPhase) {}

  /** Starts a replica through `start`, handing it the environment that makes it armable. */
  spawn(start: (env: Record<string, string>) => WorkerProcess): WorkerProcess {
    const file = join(this.#dir, `${this.#spawned++}.arm`);
    const worker = start({ ONCEFLOW_CHAOS_KILL_AT: `${this.phase}:1:outputs@${file}` });
    this.#files.set(worker, file);
    return worker;
  }

  arm(worker: WorkerProcess): void {
    const file = this.#files.get(worker);
    if (file !== undefined) writeFileSync(file, '');
  }

  disarm(worker: WorkerProcess): void {
    const file = this.#files.get(worker);
    if (file !== undefined) rmSync(file, { force: true });
  }

  close(): void {
    rmSync(this.#dir, { recursive: true, force: true });
  }
}
