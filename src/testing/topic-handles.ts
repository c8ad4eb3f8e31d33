import type { Serde, SerdeContext } from '../serdes/serde.ts';
import type { Step } from '../runtime/nodes/step.ts';
import { headersToObject, type TopicLog } from './topic-log.ts';

export interface PipeOptions {
  readonly timestamp?: number;
  readonly headers?: Readonly<Record<string, string>>;
}

export interface TestRecord<K, V> {
  readonly key: K;
  readonly value: V;
  readonly timestamp: number;
  readonly partition: number;
  readonly offset: number;
  readonly headers: Readonly<Record<string, string>>;
}

export interface TestInputTopic<K, V> {
  /** A null value is a tombstone: it deletes the key's row of a table. */
  pipe(key: K, value: V | null, opts?: PipeOptions): Step;
  /** Pipes bytes as they are, e.g. a value that does not decode. */
  pipeRaw(key: Buffer | null, value: Buffer | null, opts?: PipeOptions): Step;
}

export interface TestOutputTopic<K, V> {
  /** Reads (and consumes) every committed record not read yet. */
  readRecords(): TestRecord<K, V>[];
  readKeyValues(): Array<[K, V]>;
  readValues(): V[];
  isEmpty(): boolean;
}

export interface TopicSerdes {
  readonly keySerde: Serde<unknown>;
  readonly valueSerde: Serde<unknown>;
}

/** Reads `topic` of the log as the test's output, decoded with the serdes of the stage that writes it. */
export function outputTopic<K, V>(log: TopicLog, topic: string, { keySerde, valueSerde }: TopicSerdes): TestOutputTopic<K, V> {
  const kctx: SerdeContext = { topic, role: 'key' };
  const vctx: SerdeContext = { topic, role: 'value' };
  const read = (): TestRecord<K, V>[] =>
    log.readUnread(topic).map((r) => ({
      key: keySerde.deserialize(r.key, kctx) as K,
      value: valueSerde.deserialize(r.value, vctx) as V,
      timestamp: r.timestamp,
      partition: r.partition,
      offset: r.offset,
      headers: headersToObject(r.headers),
    }));
  return {
    readRecords: read,
    readKeyValues: () => read().map((r) => [r.key, r.value]),
    readValues: () => read().map((r) => r.value),
    isEmpty: () => log.allRead(topic),
  };
}
