import type { HostedCache } from './hosted-tasks.ts';
import type { PackedRun } from './record-transfer.ts';
import type { RunResult } from './offloaded-tasks.ts';
import type { TaskAnswer, TaskRequest } from './task-messages.ts';

/**
 * The processing thread as the worker sees it: a helper thread that decodes records, runs them through
 * the stateless sub-topologies' stages and encodes their outputs, while the main thread, which alone
 * may call the Kafka client, consumes and produces. The client's binding is not usable from another
 * thread; deserialization, stage code and serialization are about half of the main thread's time on a
 * stateless pipeline, and a worker has two cores to spread them over.
 *
 * The thread only computes: what it returns is produced by the main thread, into the open
 * transaction, with the offsets of the records it stands for, exactly as if the main thread had
 * computed it. Anything it cannot do (a stage that threw, a thread that died) is done by the main
 * thread instead.
 */

/** What the worker sends the thread first: where the topology comes from and what the tasks need. */
export interface ThreadInit {
  /** The topology file, loaded again on the thread (stage functions cannot cross threads). */
  readonly file: string;
  readonly appId?: string | undefined;
  /** For serdes that talk to a schema registry: the thread prepares its own copies against it. */
  readonly registryUrl?: string | undefined;
  readonly messageMaxBytes: number;
  readonly topicMaxMessageBytes: Readonly<Record<string, number>>;
  /** The record cache of the tasks the thread hosts (its own budget, out of the worker's). */
  readonly cache?: HostedCache | undefined;
}

export type ToThread =
  | ({ readonly type: 'init' } & ThreadInit)
  | { readonly type: 'process'; readonly id: number; readonly runs: readonly { readonly subtopology: number; readonly run: PackedRun; readonly streamTime: number }[] }
  | { readonly type: 'task'; readonly id: number; readonly request: TaskRequest };

export type FromThread =
  | { readonly type: 'ready'; readonly offloadable: readonly number[]; readonly hostable?: readonly number[]; readonly sourceTopics: readonly (readonly string[])[] }
  | { readonly type: 'failed'; readonly message: string }
  | { readonly type: 'processed'; readonly id: number; readonly results: readonly RunResult[] }
  | { readonly type: 'task'; readonly id: number; readonly answer: TaskAnswer };

/** A worker_threads Worker, narrowed to what is used (a fake in tests). */
export interface ThreadPort {
  postMessage(message: ToThread, transfer?: readonly ArrayBuffer[]): void;
  on(event: 'message', listener: (message: FromThread) => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: 'exit', listener: (code: number) => void): unknown;
  off(event: 'message', listener: (message: FromThread) => void): unknown;
  off(event: 'error', listener: (error: Error) => void): unknown;
  off(event: 'exit', listener: (code: number) => void): unknown;
  terminate(): Promise<number>;
}

export type ThreadSpawner = () => ThreadPort;

/** How long the thread may take to load the topology before the worker goes on without it. */
export const START_TIMEOUT_MS = 30_000;

export class ProcessingThread {
  private nextId = 0;
  private readonly pending = new Map<number, (results: readonly RunResult[] | undefined) => void>();
  private readonly answers = new Map<number, (answer: TaskAnswer | undefined) => void>();
  private dead: string | undefined;

  private constructor(
    private readonly port: ThreadPort,
    /** The stateless sub-topologies whose runs the thread computes in place of the main thread. */
    readonly offloadable: ReadonlySet<number>,
    /** The stateful sub-topologies whose tasks the thread can host, stores and all (thread-task.ts). */
    readonly hostable: ReadonlySet<number>,
  ) {
    port.on('message', (m) => {
      if (m.type === 'processed') {
        this.pending.get(m.id)?.(m.results);
        this.pending.delete(m.id);
      } else if (m.type === 'task') {
        this.answers.get(m.id)?.(m.answer);
        this.answers.delete(m.id);
      }
    });
    port.on('error', (e) => this.fail(`the processing thread failed: ${e.message}`));
    port.on('exit', (code) => this.fail(`the processing thread exited (${code})`));
  }

  /**
   * Starts the thread and waits until it loaded the topology. `expected`: each sub-topology's source
   * topics on the main thread; a topology that compiles differently there (it reads its environment
   * at import, say) is not run on the thread at all. Resolves to the reason when the thread is not used.
   */
  static async start(spawn: ThreadSpawner, init: ThreadInit, expected: readonly (readonly string[])[], timeoutMs = START_TIMEOUT_MS): Promise<ProcessingThread | string> {
    let port: ThreadPort;
    try {
      port = spawn();
    } catch (e) {
      return `could not start the processing thread: ${(e as Error).message}`;
    }
    let settle!: (answer: FromThread | string) => void;
    const answering = new Promise<FromThread | string>((resolve) => (settle = resolve));
    const onMessage = (m: FromThread) => settle(m);
    const onError = (e: Error) => settle(`the processing thread failed to start: ${e.message}`);
    const onExit = (code: number) => settle(`the processing thread exited (${code}) while starting`);
    port.on('message', onMessage);
    port.on('error', onError);
    port.on('exit', onExit);
    // A topology file whose import never ends must not hold the worker's start.
    const timer = setTimeout(() => settle(`the processing thread did not load the topology within ${timeoutMs} ms`), timeoutMs);
    let answer: FromThread | string;
    try {
      port.postMessage({ type: 'init', ...init });
      answer = await answering;
    } finally {
      clearTimeout(timer);
      // The running thread's own listeners take over; these would answer a promise settled long ago.
      port.off('message', onMessage);
      port.off('error', onError);
      port.off('exit', onExit);
    }
    const refuse = async (why: string) => {
      await port.terminate().catch(() => undefined);
      return why;
    };
    if (typeof answer === 'string') return refuse(answer);
    if (answer.type === 'failed') return refuse(`the processing thread could not load the topology: ${answer.message}`);
    if (answer.type !== 'ready') return refuse(`the processing thread answered ${answer.type} to its start`);
    if (JSON.stringify(answer.sourceTopics) !== JSON.stringify(expected)) return refuse('the topology compiles differently on the processing thread');
    const hostable = answer.hostable ?? [];
    if (answer.offloadable.length === 0 && hostable.length === 0) return refuse('no sub-topology of this topology can run on the processing thread');
    return new ProcessingThread(port, new Set(answer.offloadable), new Set(hostable));
  }

  /** Whether the thread still runs; once it failed, the main thread does all the work. */
  get alive(): boolean {
    return this.dead === undefined;
  }

  /** Why the thread stopped being used, if it did. */
  get failure(): string | undefined {
    return this.dead;
  }

  /** The runs' results in order, or undefined when the thread could not process them (it died). */
  process(runs: readonly { readonly subtopology: number; readonly run: PackedRun; readonly streamTime: number }[]): Promise<readonly RunResult[] | undefined> {
    if (this.dead !== undefined) return Promise.resolve(undefined);
    const id = this.nextId++;
    const transfer: ArrayBuffer[] = [];
    for (const { run } of runs) transfer.push(run.bytes, run.fields.buffer as ArrayBuffer);
    return new Promise((resolve) => {
      this.pending.set(id, resolve);
      this.port.postMessage({ type: 'process', id, runs }, transfer);
    });
  }

  /** A hosted task's request, answered in order with the thread's other work; undefined when the thread died. */
  request(request: TaskRequest, transfer: readonly ArrayBuffer[] = []): Promise<TaskAnswer | undefined> {
    if (this.dead !== undefined) return Promise.resolve(undefined);
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.answers.set(id, resolve);
      this.port.postMessage({ type: 'task', id, request }, transfer);
    });
  }

  async close(): Promise<void> {
    this.fail('closed');
    await this.port.terminate().catch(() => undefined);
  }

  private fail(why: string): void {
    this.dead ??= why;
    for (const resolve of this.pending.values()) resolve(undefined);
    this.pending.clear();
    for (const resolve of this.answers.values()) resolve(undefined);
    this.answers.clear();
  }
}
