import { OnceflowError } from '../errors.ts';

export interface TopologyErrorLocation {
  /** The node the problem is on, when there is one. */
  readonly node?: string;
  /** The topology file, when the builder knows it (loadTopology sets it). */
  readonly file?: string;
}

function where(loc: TopologyErrorLocation): string {
  const parts: string[] = [];
  if (loc.node !== undefined) parts.push(`node ${loc.node}`);
  if (loc.file !== undefined) parts.push(`in ${loc.file}`);
  return parts.length > 0 ? ` (${parts.join(' ')})` : '';
}

/** A topology that cannot run; raised by `compile` before anything touches Kafka. */
export abstract class TopologyValidationError extends OnceflowError {
  readonly node: string | undefined;
  readonly file: string | undefined;
  constructor(message: string, loc: TopologyErrorLocation) {
    super(message + where(loc));
    this.node = loc.node;
    this.file = loc.file;
  }
}

export class InvalidAppIdError extends TopologyValidationError {
  readonly code = 'INVALID_APP_ID';
  constructor(appId: string, loc: TopologyErrorLocation) {
    super(`app id ${JSON.stringify(appId)} is not a valid consumer group / transactional id prefix: use 1-249 characters of [a-zA-Z0-9._-]`, loc);
  }
}

export class InvalidTopicNameError extends TopologyValidationError {
  readonly code = 'INVALID_TOPIC_NAME';
  constructor(topic: string, loc: TopologyErrorLocation) {
    super(`topic name ${JSON.stringify(topic)} is not valid: use 1-249 characters of [a-zA-Z0-9._-]`, loc);
  }
}

export class EmptyTopologyError extends TopologyValidationError {
  readonly code = 'EMPTY_TOPOLOGY';
  constructor(loc: TopologyErrorLocation) {
    super('the topology has no source stream: call builder.stream(topic, serdes)', loc);
  }
}

export class DuplicateNodeNameError extends TopologyValidationError {
  readonly code = 'DUPLICATE_NODE_NAME';
  constructor(name: string, loc: TopologyErrorLocation) {
    super(`two stages are named ${JSON.stringify(name)}; stage names must be unique`, loc);
  }
}

export class DuplicateSourceTopicError extends TopologyValidationError {
  readonly code = 'DUPLICATE_SOURCE_TOPIC';
  constructor(topic: string, loc: TopologyErrorLocation) {
    super(`topic ${JSON.stringify(topic)} is read by two source streams; read it once and branch or reuse the stream`, loc);
  }
}

export class StoreSharedError extends TopologyValidationError {
  readonly code = 'STORE_USED_BY_MULTIPLE_STAGES';
  constructor(store: string, other: string, loc: TopologyErrorLocation) {
    super(`store ${JSON.stringify(store)} is already used by stage ${other}; each store belongs to one stage`, loc);
  }
}

export class TopologyCycleError extends TopologyValidationError {
  readonly code = 'TOPOLOGY_CYCLE';
  constructor(topics: readonly string[], loc: TopologyErrorLocation) {
    super(`the topology feeds back into itself through topics ${topics.join(' -> ')}; records would loop forever`, loc);
  }
}

export class SinkToOwnSourceError extends TopologyValidationError {
  readonly code = 'SINK_TO_OWN_SOURCE';
  constructor(topic: string, loc: TopologyErrorLocation) {
    super(`sink writes to ${JSON.stringify(topic)}, which the same sub-topology reads; records would loop forever`, loc);
  }
}

export class StatefulWithoutKeyError extends TopologyValidationError {
  readonly code = 'STATEFUL_STAGE_WITHOUT_KEY';
  constructor(kind: string, loc: TopologyErrorLocation) {
    super(`${kind} keeps state per key but its input stream has no key; re-key it first with selectKey, map or groupBy`, loc);
  }
}

export class InvalidWindowError extends TopologyValidationError {
  readonly code = 'INVALID_WINDOW';
  constructor(detail: string, loc: TopologyErrorLocation) {
    super(`invalid window: ${detail}`, loc);
  }
}

export class InvalidStageOptionError extends TopologyValidationError {
  readonly code = 'INVALID_STAGE_OPTION';
  constructor(detail: string, loc: TopologyErrorLocation) {
    super(detail, loc);
  }
}

export class MissingSerdeError extends TopologyValidationError {
  readonly code = 'MISSING_SERDE';
  constructor(what: string, hint: string, loc: TopologyErrorLocation) {
    super(`no serde for ${what}: ${hint}`, loc);
  }
}

export class AsyncStageFunctionError extends TopologyValidationError {
  readonly code = 'ASYNC_STAGE_FUNCTION';
  constructor(kind: string, loc: TopologyErrorLocation) {
    super(`the ${kind} function is async; ${kind} runs inside the Kafka transaction and must be synchronous. Put I/O in an effect(name, fn, { idempotencyKey }) stage instead`, loc);
  }
}

export class MissingPartitionCountError extends OnceflowError {
  readonly code = 'MISSING_PARTITION_COUNT';
  constructor(topic: string) {
    super(`resolvePartitions needs the partition count of source topic ${JSON.stringify(topic)}`);
  }
}

export class JoinInputNotTableError extends TopologyValidationError {
  readonly code = 'JOIN_INPUT_NOT_TABLE';
  constructor(kind: string, loc: TopologyErrorLocation) {
    super(`a join reads a table's rows by key, but its table input is a ${kind}; windowed aggregates cannot be joined`, loc);
  }
}

/** Both sides of a join must place a key in the same partition, so they must encode it the same way. */
export class JoinKeySerdeMismatchError extends TopologyValidationError {
  readonly code = 'JOIN_KEY_SERDE_MISMATCH';
  constructor(left: string, right: string, loc: TopologyErrorLocation) {
    super(`the two inputs of the join encode their keys differently (${left} and ${right}), so equal keys may land in different partitions; give both the same key serde`, loc);
  }
}

/**
 * Raised by resolvePartitions, at compile-time planning with known counts and again at start against
 * the broker's: a join's inputs must have as many partitions as each other.
 */
export class CoPartitionError extends OnceflowError {
  readonly code = 'CO_PARTITION_MISMATCH';
  readonly join: string;
  readonly topics: readonly { readonly topic: string; readonly partitions: number }[];
  constructor(join: string, a: { topic: string; partitions: number }, b: { topic: string; partitions: number }) {
    super(`join ${join} needs co-partitioned inputs, but topic ${JSON.stringify(a.topic)} has ${a.partitions} partitions and ${JSON.stringify(b.topic)} has ${b.partitions}; repartition one of them (e.g. selectKey / groupBy after reading it) or give both the same partition count`);
    this.join = join;
    this.topics = [a, b];
  }
}
