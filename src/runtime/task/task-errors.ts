import { OnceflowError } from '../../errors.ts';

export class TaskBusyError extends OnceflowError {
  readonly code = 'TASK_BUSY';
  constructor(task: string) {
    super(`task ${task} is still processing the previous record; await the promise process() returned before the next call`);
  }
}

export class UnknownSourceTopicError extends OnceflowError {
  readonly code = 'UNKNOWN_SOURCE_TOPIC';
  constructor(task: string, topic: string, known: readonly string[]) {
    super(`task ${task} does not read topic ${JSON.stringify(topic)}; it reads ${known.join(', ')}`);
  }
}

export class UnknownSubtopologyError extends OnceflowError {
  readonly code = 'UNKNOWN_SUBTOPOLOGY';
  constructor(id: number, count: number) {
    super(`sub-topology ${id} does not exist; this topology has sub-topologies 0..${count - 1}`);
  }
}

export class UnknownStoreError extends OnceflowError {
  readonly code = 'UNKNOWN_STORE';
  constructor(task: string, store: string) {
    super(`task ${task} has no store ${JSON.stringify(store)}`);
  }
}
