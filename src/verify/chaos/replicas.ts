import type { PhaseTrigger } from '../phase-trigger.ts';
import { WorkerProcess } from '../worker-process.ts';

export interface ReplicaSettings {
  readonly topologyFile: string;
  readonly appId: string;
  readonly guarantee: string;
  /** The environment of every worker; a fault may add to it for the process it starts. */
  readonly env: Readonly<Record<string, string>>;
  readonly log: (line: string) => void;
  /** Every process starts armable: the harness chooses when it dies at the trigger's phase (ChaosOptions.onlyAtPhase). */
  readonly trigger?: PhaseTrigger | undefined;
}

/**
 * The worker processes of a chaos run, as a supervisor sees them: one live process per instance id, and a
 * live process that exits when the harness did not stop it is started again and counted (each is a finding).
 * The harness marks every process it stops, kills or expects to exit, so that only the others count.
 */
export class Replicas {
  private readonly live = new Map<string, WorkerProcess>();
  /** Every process ever started, live or not: all are stopped at the end. */
  private readonly started: WorkerProcess[] = [];
  private readonly stoppedByHarness = new Set<WorkerProcess>();
  private nextInstance = 0;
  // Set once the run is over: workers exiting from then on are being stopped, not crashing.
  private finishing = false;
  private exitsOnTheirOwn = 0;

  constructor(private readonly settings: ReplicaSettings) {}

  /** Workers that exited on their own (not stopped by the harness), each started again. */
  get workerExits(): number {
    return this.exitsOnTheirOwn;
  }

  get size(): number {
    return this.live.size;
  }

  /** A process with this instance id, not (yet) the live one: the caller decides whether it takes over. */
  spawn(instance: string, extraEnv: Record<string, string> = {}): WorkerProcess {
    const { topologyFile, appId, guarantee, env, log, trigger } = this.settings;
    const start = (armable: Record<string, string>): WorkerProcess =>
      new WorkerProcess(instance, topologyFile, ['--app-id', appId, '--instance-id', instance, '--guarantee', guarantee], { ...env, ...armable, ...extraEnv });
    const worker = trigger ? trigger.spawn(start) : start({});
    this.started.push(worker);
    void worker.exit().then(({ code, signal }) => {
      if (this.finishing || this.live.get(instance) !== worker || this.stoppedByHarness.has(worker)) return;
      this.exitsOnTheirOwn++;
      log(`${instance} exited on its own (code ${code}, signal ${signal}), started again; its last stderr:\n  ${worker.stderr.slice(-12).join('\n  ')}`);
      this.startLive(instance);
    });
    return worker;
  }

  /** Starts a process for the instance and makes it the live one. */
  startLive(instance: string, extraEnv: Record<string, string> = {}): WorkerProcess {
    const worker = this.spawn(instance, extraEnv);
    this.live.set(instance, worker);
    return worker;
  }

  /** An instance id not used before in this run. */
  newInstanceId(): string {
    return `r${this.nextInstance++}`;
  }

  /** Makes an already started process the live one of its instance. */
  makeLive(instance: string, worker: WorkerProcess): void {
    this.live.set(instance, worker);
  }

  /** A live replica drawn at random, by its instance id. */
  draw(random: () => number): [string, WorkerProcess] | undefined {
    const instances = [...this.live.keys()];
    const instance = instances[Math.floor(random() * instances.length)];
    return instance === undefined ? undefined : [instance, this.live.get(instance)!];
  }

  /** The replica started first among those live. */
  oldest(): [string, WorkerProcess] | undefined {
    return [...this.live.entries()][0];
  }

  /** The process will exit and that is the harness's doing (or its test), not a crash. */
  expectExit(worker: WorkerProcess): void {
    this.stoppedByHarness.add(worker);
  }

  /** An exit expected of it is called off (it was armed and never died): exiting now would be its own. */
  expectRunning(worker: WorkerProcess): void {
    this.stoppedByHarness.delete(worker);
  }

  /** SIGKILL, and wait until the process is gone. */
  async kill(worker: WorkerProcess): Promise<void> {
    this.expectExit(worker);
    worker.kill('SIGKILL');
    await worker.exit();
  }

  /** SIGTERM (a clean shutdown), and wait until the process is gone. */
  async stop(worker: WorkerProcess): Promise<void> {
    this.expectExit(worker);
    await worker.stop();
  }

  /** Takes the instance out of the group for good: stopped, and nobody starts it again. */
  async retire(instance: string, worker: WorkerProcess): Promise<void> {
    this.expectExit(worker);
    this.live.delete(instance);
    await worker.stop();
  }

  async allStarted(): Promise<void> {
    await Promise.all([...this.live.values()].map((worker) => worker.waitFor((e) => e.type === 'started', 60_000, 'start')));
  }

  /** Each live replica's last stderr and what it is doing now: where a replica that stopped making progress stopped. */
  async describeLive(): Promise<void> {
    const { log } = this.settings;
    for (const [instance, worker] of this.live) {
      log(`${instance} (pid ${worker.pid}, ${worker.alive ? 'alive' : 'exited'}), last stderr:\n  ${worker.stderr.slice(-20).join('\n  ')}`);
      const stacks = await worker.stackReport().catch((err: unknown) => `no report: ${String(err)}`);
      if (stacks !== undefined) log(`${instance} now:\n  ${stacks}`);
    }
  }

  /** The run is over: from now on an exit is the harness stopping the workers. */
  finish(): void {
    this.finishing = true;
  }

  async stopAll(): Promise<void> {
    this.finish();
    await Promise.all(this.started.map((worker) => worker.stop(10_000)));
  }
}
