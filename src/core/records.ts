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
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  /** Milliseconds since the epoch (the record's CreateTime or LogAppendTime). */
  readonly timestamp: number;
  readonly headers: readonly RecordHeader[];
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
   * result a record cache held back and released later. The worker takes the lineage from it.
   */
  readonly source?: IncomingRecord;
}

/** Where a task sends what it emits; the worker's collector puts it in the open transaction. */
export interface RecordCollector {
  send(record: OutgoingRecord): void;
}

/** Where a task sends what it emits when its transaction is about to commit; `send` gets records with a `source`. */
export interface CommitCollector extends RecordCollector {
  /** A changelog record: it stands for no single input record, so it carries no lineage. */
  readonly changelog: (record: OutgoingRecord) => void;
}
