// The header names onceflow writes: a contract with readers outside the runtime (the verifier, the
// dead-letter tools, the test driver), so each name is spelled once, here.

/** Stamped on every record the worker produces: the input record it stands for, and the transaction. */
export const LINEAGE = {
  topic: 'onceflow.src.topic',
  partition: 'onceflow.src.partition',
  offset: 'onceflow.src.offset',
  seq: 'onceflow.src.seq',
  txn: 'onceflow.txn.id',
} as const;

/** Stamped on a dead letter: why it failed, and where its record was read. */
export const DEAD_LETTER = {
  code: 'onceflow.error.code',
  message: 'onceflow.error.message',
  stack: 'onceflow.error.stack',
  attempts: 'onceflow.error.attempts',
  stage: 'onceflow.error.stage',
  time: 'onceflow.error.time',
  sourceTopic: 'onceflow.source.topic',
  sourcePartition: 'onceflow.source.partition',
  sourceOffset: 'onceflow.source.offset',
} as const;
