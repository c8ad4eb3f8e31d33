import { EventEmitter } from 'node:events';
import { parseWorkerConfig, transactionalId, type ResolvedWorkerConfig, type WorkerConfigInput } from '../../src/runtime/base/config.ts';
import { newWorkerStats, type WorkerEvent, type WorkerStats } from '../../src/runtime/base/worker-events.ts';
import type { ObservedWorker } from '../../src/observability/worker-view.ts';

/** A stand-in that emits the real worker's events and holds its stats, for unit tests of what observes it. */
export class FakeWorker extends EventEmitter implements ObservedWorker {
  readonly config: ResolvedWorkerConfig;
  readonly stats: WorkerStats = newWorkerStats();
  private failure: unknown;
  /** Left unset, the worker reports no lifecycle state (as an older worker or a stand-in would). */
  state: string | undefined;

  constructor(config: Partial<WorkerConfigInput> = {}) {
    super();
    const parsed = parseWorkerConfig({ bootstrap: '127.0.0.1:1', appId: 'orders', ...config });
    this.config = { ...parsed, instanceId: parsed.instanceId ?? 'w1' };
  }

  get transactionalId(): string {
    return transactionalId(this.config);
  }

  send(e: WorkerEvent): void {
    this.emit('event', e);
  }

  /** The loop dying: done() rejects, then `stopped` is emitted, as Worker.loop's finally does. */
  die(error: unknown): void {
    this.failure = error;
    this.send({ type: 'stopped' });
  }

  done(): Promise<void> {
    return this.failure === undefined ? Promise.resolve() : Promise.reject(this.failure);
  }
}
