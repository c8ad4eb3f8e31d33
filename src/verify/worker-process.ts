import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createInterface } from 'node:readline';
import { packageLoaderArgs, packageModule, projectRoot } from '../kafka/paths.ts';

export interface WorkerEventLine {
  readonly type: string;
  readonly [k: string]: unknown;
}

/** A day: longer than any verified run, so no repartition record is purged before the verifier reads it. */
export const VERIFIABLE_PURGE_INTERVAL_MS = 86_400_000;

/**
 * A worker replica in its own process, as users run it: `onceflow run <file>`; its events come as JSON lines.
 * The CLI is this package's own, found from this module, so that `demo` and `chaos` run from an installed
 * package as from a checkout; a relative `file` is below the package's folder.
 */
export class WorkerProcess {
  readonly events: WorkerEventLine[] = [];
  /** When each of `events` arrived (ms since the epoch), by index: what a benchmark times a failover by. */
  readonly arrivedAt: number[] = [];
  readonly stderr: string[] = [];
  private readonly child: ChildProcess;
  private readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private waiters: { pred: (e: WorkerEventLine) => boolean; resolve: (e: WorkerEventLine) => void }[] = [];

  constructor(
    readonly name: string,
    file: string,
    args: readonly string[],
    env: Readonly<Record<string, string>>,
  ) {
    // The suite's own tsc checks the topologies it runs; checking each replica again would only delay its first start.
    // On SIGUSR2 node writes a diagnostic report (JS stack, libuv handles), one file per request: how a stuck worker is read.
    mkdirSync(this.reportDir, { recursive: true });
    const report = ['--report-on-signal', '--report-compact', `--report-directory=${this.reportDir}`];
    this.child = spawn(process.execPath, [...report, ...packageLoaderArgs(), packageModule('cli/main'), 'run', file, '--events', '--no-typecheck', ...args], {
      cwd: projectRoot(),
      // The verifiers trace every output back through the repartition topics after the run, so those must stay
      // whole: the purge is off unless a run asks for it (the purge's own tests do).
      env: { ...process.env, ONCEFLOW_REPARTITION_PURGE_INTERVAL_MS: String(VERIFIABLE_PURGE_INTERVAL_MS), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      let ev: WorkerEventLine;
      try {
        ev = JSON.parse(line) as WorkerEventLine;
      } catch {
        return;
      }
      this.events.push(ev);
      this.arrivedAt.push(Date.now());
      this.waiters = this.waiters.filter((w) => {
        if (!w.pred(ev)) return true;
        w.resolve(ev);
        return false;
      });
    });
    createInterface({ input: this.child.stderr! }).on('line', (line) => this.stderr.push(line));
    this.exited = new Promise((resolve) => this.child.on('exit', (code, signal) => resolve({ code, signal })));
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  private get reportDir(): string {
    return join(tmpdir(), `onceflow-reports-${process.pid}`);
  }

  /**
   * Asks the running process for node's diagnostic report and gives its main thread's JavaScript stack
   * (empty when the loop is idle, awaiting) and its active libuv handles by type. Node writes the report
   * from its event loop: no report within 5 s means the event loop itself is blocked.
   */
  async stackReport(): Promise<string | undefined> {
    if (!this.alive) return undefined;
    const mine = () => readdirSync(this.reportDir).filter((f) => f.includes(`.${this.pid}.`));
    const before = new Set(mine());
    this.child.kill('SIGUSR2');
    for (let waited = 0; waited < 5_000; waited += 250) {
      await sleep(250);
      const file = mine().find((f) => !before.has(f));
      if (file === undefined) continue;
      try {
        const report = JSON.parse(readFileSync(join(this.reportDir, file), 'utf8')) as DiagnosticReport;
        // Read once: left in place, every stuck-worker diagnosis of every run would pile up in the temp directory.
        rmSync(join(this.reportDir, file), { force: true });
        const handles = new Map<string, number>();
        for (const h of report.libuv ?? []) if (h.is_active) handles.set(h.type, (handles.get(h.type) ?? 0) + 1);
        const stack = report.javascriptStack?.stack ?? [];
        return [
          `javascript stack: ${stack.length === 0 ? '(none: the event loop is idle, awaiting)' : stack.slice(0, 15).join(' | ')}`,
          `active handles: ${[...handles].map(([type, n]) => `${type} ×${n}`).join(', ')}`,
        ].join('\n  ');
      } catch {
        // Still being written: read again.
      }
    }
    return this.alive ? 'no diagnostic report within 5 s: the event loop is blocked' : undefined;
  }

  count(type: string): number {
    return this.events.filter((e) => e.type === type).length;
  }

  /** Resolves on the first event (already seen or future) matching; rejects if the process exits first or time runs out. */
  waitFor(pred: (e: WorkerEventLine) => boolean, timeoutMs = 60_000, what = 'event'): Promise<WorkerEventLine> {
    const seen = this.events.find(pred);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.name}: no ${what} within ${timeoutMs} ms; stderr: ${this.stderr.slice(-10).join('\n')}`)), timeoutMs);
      const done = (e: WorkerEventLine) => {
        clearTimeout(timer);
        resolve(e);
      };
      this.waiters.push({ pred, resolve: done });
      void this.exited.then(({ code, signal }) => {
        clearTimeout(timer);
        reject(new Error(`${this.name} exited (code ${code}, signal ${signal}) before ${what}; stderr: ${this.stderr.slice(-15).join('\n')}`));
      });
    });
  }

  kill(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  exit(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    return this.exited;
  }

  /** The exit, or undefined if the process is still running after `ms` (its timer never outlives the answer). */
  async exitWithin(ms: number): Promise<{ code: number | null; signal: NodeJS.Signals | null } | undefined> {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([this.exited, new Promise<undefined>((resolve) => (timer = setTimeout(resolve, ms, undefined)))]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** SIGTERM, then SIGKILL if it does not exit in time. */
  async stop(timeoutMs = 30_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return this.exited;
    this.child.kill('SIGCONT');
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    const result = await this.exited;
    clearTimeout(timer);
    return result;
  }
}

/** Polls `check` until it returns true. */
export async function eventually(check: () => Promise<boolean> | boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** The parts of node's diagnostic report (`process.report`) read here. */
interface DiagnosticReport {
  javascriptStack?: { message?: string; stack?: string[] };
  libuv?: { type: string; is_active: boolean }[];
}
