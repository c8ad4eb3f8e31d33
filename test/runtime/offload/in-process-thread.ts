import { EventEmitter } from 'node:events';
import type { SerdeUsage, TaskPlan } from '../../../src/graph/types.ts';
import type { ThreadPort, ToThread } from '../../../src/runtime/offload/processing-thread.ts';
import { ThreadRequests } from '../../../src/runtime/offload/thread-requests.ts';

/** A processing thread in-process: the same protocol, messages cloned as posting them would. */
export class InProcessThread extends EventEmitter implements ThreadPort {
  /** Ids of the `process` requests it was sent. */
  readonly requests: number[] = [];
  /** Requests for hosted tasks it answered, by operation. */
  readonly taskRequests = new Map<string, number>();
  /** Runs the thread stopped short of their end (a record it failed on, left to the main thread). */
  shortRuns = 0;
  private readonly runLengths = new Map<number, number[]>();
  private readonly handler: ThreadRequests;

  constructor(
    load: () => Promise<TaskPlan & { serdeUsages(): SerdeUsage[] }>,
    private dieOnRequest = Number.POSITIVE_INFINITY,
  ) {
    super();
    this.handler = new ThreadRequests(load, (m) => {
      if (m.type === 'processed') this.shortRuns += m.results.filter((r, i) => r.processed < (this.runLengths.get(m.id)?.[i] ?? 0)).length;
      this.emit('message', structuredClone(m));
    });
  }

  postMessage(message: ToThread): void {
    const m = structuredClone(message);
    setImmediate(() => {
      if (m.type === 'process' || m.type === 'task') {
        if (this.requests.push(m.id) >= this.dieOnRequest) {
          this.emit('exit', 1);
          return;
        }
      }
      if (m.type === 'process') this.runLengths.set(m.id, m.runs.map((r) => r.run.count));
      if (m.type === 'task') this.taskRequests.set(m.request.op, (this.taskRequests.get(m.request.op) ?? 0) + 1);
      void this.handler.receive(m);
    });
  }

  /** The thread exits at the next request it is sent. */
  dieAtNextRequest(): void {
    this.dieOnRequest = this.requests.length + 1;
  }

  async terminate(): Promise<number> {
    return 0;
  }
}
