// stream.repartition() (Kafka Streams' KStream#repartition, KIP-221): records go through an internal
// topic keyed by their current key, so that what follows runs in a sub-topology of its own, with as
// many tasks as that topic has partitions (e.g. to spread a few hot input partitions over more tasks).
import type { Serde } from '../serdes/serde.ts';
import type { StageSpec } from './nodes.ts';
import type { KeyValueSerdeOptions } from './types.ts';
import { asSerde, type AnySerde } from './serde-typing.ts';
import { Stream } from './stream.ts';

export interface RepartitionOptions<K, V> extends KeyValueSerdeOptions<K, V> {
  /**
   * Partitions of the topic, so tasks of what follows. Default: as many as the sub-topology writing it
   * has tasks (or its reader, if wider), like the repartition topics a `groupBy` makes.
   */
  readonly partitions?: number;
}

declare module './stream.ts' {
  interface Stream<K, V> {
    /**
     * Sends the records through the internal topic `<appId>-<name>-repartition` (partitioned by key)
     * and continues from it in a new sub-topology. Stateless and inside the transaction: the write,
     * the read and the offsets commit exactly once.
     */
    repartition(opts?: RepartitionOptions<K, V>): Stream<K, V>;
  }
}

Stream.prototype.repartition = function repartition<K, V>(this: Stream<K, V>, opts?: RepartitionOptions<K, V>): Stream<K, V> {
  const key = (asSerde(opts?.key) ?? this.keySerde) as Serde<K> | undefined;
  const value = (asSerde(opts?.value) ?? this.valueSerde) as Serde<V> | undefined;
  const spec: StageSpec = { kind: 'repartition', ...(opts?.partitions !== undefined ? { partitions: opts.partitions } : {}) };
  const index = this.builder.addNode(spec, [this.nodeIndex], opts?.name, key as AnySerde | undefined, value as AnySerde | undefined);
  return new Stream<K, V>(this.builder, index, key, value);
};
