import type { CompiledStore } from '../../graph/types.ts';
import type { TaskHost } from '../task/worker-topology.ts';
import { ProcessingThread, type ThreadInit, type ThreadSpawner } from './processing-thread.ts';
import type { LateNotice } from './task-messages.ts';
import { ThreadTask, type ThreadTaskParts } from './thread-task.ts';

/** What the pool needs of the worker to host tasks. */
export interface PoolParts {
  readonly stores: ReadonlyMap<string, CompiledStore>;
  readonly collector: ThreadTaskParts['collector'];
  readonly onLate: (late: LateNotice) => void;
}

/**
 * The worker's processing threads (config `threads`). Each computes stateless runs as they are fetched
 * (offloaded-tasks.ts) and hosts tasks of the stateful sub-topologies it can (thread-task.ts), stores
 * and all. A task is placed on the live thread hosting the fewest, when it is created, and stays there
 * until it is closed: sticky across commits, so its state never crosses threads.
 */
export class ThreadPool implements TaskHost {
  readonly #hosted = new Map<ProcessingThread, number>();

  private constructor(
    readonly threads: readonly ProcessingThread[],
    private readonly parts: PoolParts,
  ) {
    for (const thread of threads) this.#hosted.set(thread, 0);
  }

  /**
   * Starts `count` threads; resolves to the pool, or to why there is none (each thread's start checks
   * the topology compiles there as here, processing-thread.ts). A pool runs with the threads that started.
   */
  static async start(spawn: ThreadSpawner, init: ThreadInit, expected: readonly (readonly string[])[], count: number, parts: PoolParts): Promise<ThreadPool | string> {
    const started = await Promise.all(Array.from({ length: count }, () => ProcessingThread.start(spawn, init, expected)));
    const threads = started.filter((s): s is ProcessingThread => typeof s !== 'string');
    if (threads.length === 0) return started.find((s): s is string => typeof s === 'string') ?? 'no processing thread was asked for';
    return new ThreadPool(threads, parts);
  }

  get offloadable(): ReadonlySet<number> {
    return this.threads[0]!.offloadable;
  }

  get hostable(): ReadonlySet<number> {
    return this.threads[0]!.hostable;
  }

  /** The live threads; a thread that died computes and hosts nothing more. */
  get alive(): ProcessingThread[] {
    return this.threads.filter((t) => t.alive);
  }

  host(subtopology: number, partition: number, initialStreamTime: number | undefined): ThreadTask | undefined {
    let chosen: ProcessingThread | undefined;
    for (const thread of this.alive) if (thread.hostable.has(subtopology) && (chosen === undefined || this.#hosted.get(thread)! < this.#hosted.get(chosen)!)) chosen = thread;
    if (chosen === undefined) return undefined;
    const thread = chosen;
    this.#hosted.set(thread, this.#hosted.get(thread)! + 1);
    const stores = [...this.parts.stores.values()].filter((s) => s.subtopology === subtopology);
    return new ThreadTask({
      thread,
      subtopology,
      partition,
      stores,
      collector: this.parts.collector,
      onLate: this.parts.onLate,
      initialStreamTime,
      onClose: () => this.#hosted.set(thread, this.#hosted.get(thread)! - 1),
    });
  }

  /** The thread that computes a stateless partition's runs: by partition, so each thread takes a share. */
  threadForRun(partition: number): ProcessingThread | undefined {
    const alive = this.alive;
    return alive.length === 0 ? undefined : alive[partition % alive.length];
  }

  async close(): Promise<void> {
    await Promise.all(this.threads.map((t) => t.close()));
  }
}
