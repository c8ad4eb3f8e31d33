import type { IncomingRecord, RecordHeader } from '../../core/records.ts';
import { RecordHeaders, type RecordContext } from '../../dsl/headers.ts';

/** What the record context reads of its task's state (the task context). */
interface RecordInFlight {
  readonly current: IncomingRecord;
  readonly headers: readonly RecordHeader[];
  readonly timestamp: number;
}

/**
 * The `ctx` argument of stage functions: one per task, reading the record in flight. The headers view
 * is made only when a function reads it, and kept while the headers stay the same list, so stages that
 * never look at headers cost nothing on the record path.
 */
export class TaskRecordContext implements RecordContext {
  #list: readonly RecordHeader[] | undefined;
  #view: RecordHeaders = RecordHeaders.EMPTY;

  constructor(private readonly task: RecordInFlight) {}

  get headers(): RecordHeaders {
    const list = this.task.headers;
    if (list !== this.#list) {
      this.#list = list;
      this.#view = list.length === 0 ? RecordHeaders.EMPTY : new RecordHeaders(list);
    }
    return this.#view;
  }

  get lineage(): string | undefined {
    return this.task.current.lineage;
  }

  get topic(): string {
    return this.task.current.topic;
  }

  get partition(): number {
    return this.task.current.partition;
  }

  get offset(): number {
    return this.task.current.offset;
  }

  get timestamp(): number {
    return this.task.timestamp;
  }
}
