/** A header as the Kafka client hands it over: one key, one value per entry, order kept. */
export interface RecordHeader {
  readonly key: string;
  readonly value: Buffer;
}

/** A record read from a topic partition, still in bytes. */
export interface IncomingRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  /** Its place in a record batch of a repartition topic (core/record-batch.ts), whose records share one offset; absent for a plain record. */
  readonly index?: number | undefined;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  /** Milliseconds since the epoch (the record's CreateTime or LogAppendTime). */
  readonly timestamp: number;
  /** The user's headers; onceflow's lineage header is taken out into `lineage`. */
  readonly headers: readonly RecordHeader[];
  /** The lineage header of a record onceflow produced (a repartition topic's, an output read again): see core/headers.ts. */
  readonly lineage?: string | undefined;
}

/** A record a task emits: an output, a repartition record, a changelog write or a dead letter. */
export interface OutgoingRecord {
  readonly topic: string;
  /** Set for changelog records (same partition as the task); otherwise the key decides. */
  readonly partition?: number;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly timestamp?: number;
  readonly headers?: readonly RecordHeader[];
  /**
   * The input record this one stands for, when that is not the record being processed: an aggregate
   * result a record cache held back and released later. For readers of a task's outputs (tests);
   * the worker takes the lineage from the origin each record is sent with.
   */
  readonly source?: IncomingRecord;
}

/**
 * The input record an output stands for, handed to the collector with each output. A task makes one
 * per input record for what processing it emits, and one more, shared by every result a record cache
 * holds back for it, for what is released later on its behalf.
 */
export interface RecordOrigin {
  readonly record: IncomingRecord;
  /** Sent later on the record's behalf (a cached aggregate result), not while it was processed. */
  readonly released: boolean;
  /** The next lineage sequence number for this origin: the collector takes it and moves it on. */
  seq: number;
  /** The collector's cache of `lineagePrefix(record)`: made once per origin however many outputs it has. */
  lineagePrefix?: string | undefined;
}

/**
 * Where a task sends what it emits, each output with its origin; the worker's collector puts it in
 * the open transaction. The worker hands each input record its own collector, so an output sent
 * without an origin stands for that record.
 */
export interface RecordCollector {
  send(record: OutgoingRecord, origin?: RecordOrigin): void;
}

/** Where a task sends what it emits when its transaction is about to commit: released results, then changelog records. */
export interface CommitCollector extends RecordCollector {
  /** A changelog record: it stands for no single input record, so it carries no lineage. */
  readonly changelog: (record: OutgoingRecord) => void;
}
