import type { IncomingRecord, RecordHeader } from './records.ts';

/**
 * Records of a repartition topic travel in batches: one Kafka message per partition and transaction
 * (or per ~64 KB) holding many records. A repartition topic is onceflow's own, read only by the
 * application's next sub-topology (and its verifier), and under exactly-once its records become
 * visible only when the transaction commits, so holding them until then costs no latency; it saves
 * the Kafka client's per-message cost twice per record (produce here, consume on the other side),
 * the largest share of a repartitioned record's CPU. A batch message carries this header, no key,
 * and the first record's timestamp; anything else on the topic is a plain record.
 */
export const RECORD_BATCH = { header: 'onceflow.batch', version: '1' } as const;

/** A batch is produced once it holds this many bytes (well under every broker's default max.message.bytes). */
export const RECORD_BATCH_TARGET_BYTES = 64 * 1024;
/**
 * Records a batch may hold: a record's place in its batch must fit beside its offset where a store
 * key needs one position per record (`recordPosition`), and position PLAIN_INDEX is a plain record's.
 */
export const RECORD_BATCH_MAX_RECORDS = 4095;
const PLAIN_INDEX = 4095;

/** One record in a batch: what a repartition record carries. */
export interface BatchedRecord {
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly timestamp: number;
  readonly lineage: string | undefined;
  readonly headers: readonly RecordHeader[] | undefined;
}

const KEY_NULL = 1;
const VALUE_NULL = 2;
const NO_LINEAGE = 0xffff;

/**
 * Layout per record, little-endian: flags u8 (1 key null, 2 value null), timestamp f64, key u32 length
 * + bytes (absent when null), value likewise, lineage u16 length (0xffff: none) + latin1, header
 * count u16, then per header u16 key length + utf8 key, u32 value length + bytes.
 */
export class RecordBatchWriter {
  private buffer = Buffer.allocUnsafe(16 * 1024);
  private length = 0;
  private records = 0;
  private first = 0;

  get bytes(): number {
    return this.length;
  }

  get count(): number {
    return this.records;
  }

  get firstTimestamp(): number {
    return this.first;
  }

  /** Bytes `record` takes in a batch. */
  static sizeOf(record: BatchedRecord): number {
    let size = 1 + 8 + 2 + 2 + (record.key === null ? 0 : 4 + record.key.length) + (record.value === null ? 0 : 4 + record.value.length) + (record.lineage?.length ?? 0);
    if (record.headers) for (const h of record.headers) size += 2 + Buffer.byteLength(h.key) + 4 + h.value.length;
    return size;
  }

  add(record: BatchedRecord): void {
    this.reserve(RecordBatchWriter.sizeOf(record));
    if (this.records === 0) this.first = record.timestamp;
    this.records++;
    const buffer = this.buffer;
    let at = this.length;
    buffer[at++] = (record.key === null ? KEY_NULL : 0) | (record.value === null ? VALUE_NULL : 0);
    buffer.writeDoubleLE(record.timestamp, at);
    at += 8;
    at = writeBytes(buffer, at, record.key);
    at = writeBytes(buffer, at, record.value);
    if (record.lineage === undefined) at = buffer.writeUInt16LE(NO_LINEAGE, at);
    else {
      at = buffer.writeUInt16LE(record.lineage.length, at);
      at += buffer.write(record.lineage, at, 'latin1');
    }
    const headers = record.headers ?? [];
    at = buffer.writeUInt16LE(headers.length, at);
    for (const h of headers) {
      const keyLength = Buffer.byteLength(h.key);
      at = buffer.writeUInt16LE(keyLength, at);
      at += buffer.write(h.key, at, 'utf8');
      at = writeBytes(buffer, at, h.value);
    }
    this.length = at;
  }

  /** The batch's bytes, valid until the next `add` (the Kafka client copies what it is given), and the writer emptied. */
  take(): Buffer {
    const out = this.buffer.subarray(0, this.length);
    this.length = 0;
    this.records = 0;
    return out;
  }

  private reserve(more: number): void {
    if (this.length + more <= this.buffer.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.length + more));
    this.buffer.copy(grown, 0, 0, this.length);
    this.buffer = grown;
  }
}

function writeBytes(buffer: Buffer, at: number, bytes: Buffer | null): number {
  if (bytes === null) return at;
  at = buffer.writeUInt32LE(bytes.length, at);
  return at + bytes.copy(buffer, at);
}

/** The message's headers mark it a batch (the way the Kafka client hands headers over). */
export function isRecordBatch(headers: readonly Record<string, unknown>[] | undefined): boolean {
  return headers !== undefined && headers.length === 1 && headers[0]![RECORD_BATCH.header] !== undefined;
}

/** The same mark on a record as tasks read it (a batch message handed to a processing thread whole). */
export function isRecordBatchRecord(record: { readonly headers: readonly { readonly key: string }[] }): boolean {
  return record.headers.length === 1 && record.headers[0]!.key === RECORD_BATCH.header;
}

/** A batch message's records, as the records they were; keys and values are views into `message.value`. */
export function unpackRecordBatch(message: { readonly topic: string; readonly partition: number; readonly offset: number; readonly value: Buffer | null }): IncomingRecord[] {
  const buffer = message.value;
  const out: IncomingRecord[] = [];
  if (buffer === null) return out;
  let at = 0;
  while (at < buffer.length) {
    const flags = buffer[at++]!;
    const timestamp = buffer.readDoubleLE(at);
    at += 8;
    let key: Buffer | null = null;
    if ((flags & KEY_NULL) === 0) {
      const length = buffer.readUInt32LE(at);
      key = buffer.subarray(at + 4, at + 4 + length);
      at += 4 + length;
    }
    let value: Buffer | null = null;
    if ((flags & VALUE_NULL) === 0) {
      const length = buffer.readUInt32LE(at);
      value = buffer.subarray(at + 4, at + 4 + length);
      at += 4 + length;
    }
    let lineage: string | undefined;
    const lineageLength = buffer.readUInt16LE(at);
    at += 2;
    if (lineageLength !== NO_LINEAGE) {
      lineage = buffer.toString('latin1', at, at + lineageLength);
      at += lineageLength;
    }
    const headerCount = buffer.readUInt16LE(at);
    at += 2;
    let headers: RecordHeader[] = NO_HEADERS;
    if (headerCount > 0) {
      headers = [];
      for (let h = 0; h < headerCount; h++) {
        const keyLength = buffer.readUInt16LE(at);
        const headerKey = buffer.toString('utf8', at + 2, at + 2 + keyLength);
        at += 2 + keyLength;
        const valueLength = buffer.readUInt32LE(at);
        headers.push({ key: headerKey, value: buffer.subarray(at + 4, at + 4 + valueLength) });
        at += 4 + valueLength;
      }
    }
    out.push({ topic: message.topic, partition: message.partition, offset: message.offset, index: out.length, key, value, timestamp, headers, lineage });
  }
  return out;
}

const NO_HEADERS: RecordHeader[] = [];

/**
 * A number unique to each record of a partition, for store keys that need one per record: records of
 * one batch share their message's offset and differ by their place in it.
 */
export function recordPosition(record: { readonly offset: number; readonly index?: number | undefined }): number {
  return record.offset * (PLAIN_INDEX + 1) + (record.index ?? PLAIN_INDEX);
}
