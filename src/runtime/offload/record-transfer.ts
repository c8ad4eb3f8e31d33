import type { IncomingRecord, OutgoingRecord, RecordHeader } from '../../core/records.ts';

/**
 * Records as they cross to the processing thread and back: the bytes of many records in one
 * ArrayBuffer (transferred, not copied) and their fields in a Float64Array beside it. Posting the
 * records one by one would structured-clone every Buffer, which costs the main thread about what
 * decoding them would.
 */

/** Fields per incoming record: offset, timestamp, key start, key length, value start, value length (a length of -1 is null). */
const IN_FIELDS = 6;
/** Fields per outgoing record: input index, topic index, partition (-1: none), timestamp (NaN: none), key start, key length, value start, value length. */
const OUT_FIELDS = 8;

/** A run of one partition's records, packed. */
export interface PackedRun {
  readonly topic: string;
  readonly partition: number;
  readonly count: number;
  readonly fields: Float64Array;
  readonly bytes: ArrayBuffer;
  /** Headers (the lineage one taken out) and lineage per record, only where a record has headers at all. */
  readonly headers: (readonly [key: string, value: Uint8Array][] | undefined)[] | undefined;
  readonly lineages: (string | undefined)[] | undefined;
}

/** A record as the packer reads it: the fields `toIncoming` made of a fetched message. */
export type PackableRecord = Pick<IncomingRecord, 'offset' | 'key' | 'value' | 'timestamp' | 'headers' | 'lineage'>;

export function packRun(topic: string, partition: number, records: readonly PackableRecord[]): PackedRun {
  let size = 0;
  for (const r of records) size += (r.key?.length ?? 0) + (r.value?.length ?? 0);
  const bytes = new ArrayBuffer(size);
  const target = new Uint8Array(bytes);
  const fields = new Float64Array(records.length * IN_FIELDS);
  let headers: PackedRun['headers'];
  let lineages: PackedRun['lineages'];
  let at = 0;
  for (let i = 0; i < records.length; i++) {
    const r = records[i]!;
    const f = i * IN_FIELDS;
    fields[f] = r.offset;
    fields[f + 1] = r.timestamp;
    at = put(target, r.key, fields, f + 2, at);
    at = put(target, r.value, fields, f + 4, at);
    if (r.headers.length > 0) (headers ??= [])[i] = r.headers.map((h) => [h.key, h.value] as const);
    if (r.lineage !== undefined) (lineages ??= [])[i] = r.lineage;
  }
  return { topic, partition, count: records.length, fields, bytes, headers, lineages };
}

/** The records of a packed run, their keys and values views into its bytes. */
export function unpackRun(run: PackedRun): IncomingRecord[] {
  const out: IncomingRecord[] = [];
  const { fields, bytes } = run;
  for (let i = 0; i < run.count; i++) {
    const f = i * IN_FIELDS;
    const headers = run.headers?.[i];
    out.push({
      topic: run.topic,
      partition: run.partition,
      offset: fields[f]!,
      timestamp: fields[f + 1]!,
      key: view(bytes, fields[f + 2]!, fields[f + 3]!),
      value: view(bytes, fields[f + 4]!, fields[f + 5]!),
      headers: headers === undefined ? NO_HEADERS : headers.map(([key, value]) => ({ key, value: Buffer.from(value.buffer, value.byteOffset, value.byteLength) })),
      lineage: run.lineages?.[i],
    });
  }
  return out;
}

const NO_HEADERS: readonly RecordHeader[] = [];

/** The outputs of a run, each with the index of the input record it stands for. */
export interface PackedOutputs {
  readonly count: number;
  readonly topics: readonly string[];
  readonly fields: Float64Array;
  readonly bytes: ArrayBuffer;
  readonly headers: (readonly [key: string, value: Uint8Array][] | undefined)[] | undefined;
}

export function packOutputs(outputs: readonly OutgoingRecord[], inputs: readonly number[]): PackedOutputs {
  let size = 0;
  for (const r of outputs) size += (r.key?.length ?? 0) + (r.value?.length ?? 0);
  const bytes = new ArrayBuffer(size);
  const target = new Uint8Array(bytes);
  const fields = new Float64Array(outputs.length * OUT_FIELDS);
  const topics: string[] = [];
  const topicIndex = new Map<string, number>();
  let headers: PackedOutputs['headers'];
  let at = 0;
  for (let i = 0; i < outputs.length; i++) {
    const r = outputs[i]!;
    const f = i * OUT_FIELDS;
    let t = topicIndex.get(r.topic);
    if (t === undefined) topicIndex.set(r.topic, (t = topics.push(r.topic) - 1));
    fields[f] = inputs[i]!;
    fields[f + 1] = t;
    fields[f + 2] = r.partition ?? -1;
    fields[f + 3] = r.timestamp ?? Number.NaN;
    at = put(target, r.key, fields, f + 4, at);
    at = put(target, r.value, fields, f + 6, at);
    if (r.headers !== undefined && r.headers.length > 0) (headers ??= [])[i] = r.headers.map((h) => [h.key, h.value] as const);
  }
  return { count: outputs.length, topics, fields, bytes, headers };
}

/** Calls `each` with every output and the index of its input record, in the order they were sent. */
export function forEachOutput(packed: PackedOutputs, each: (output: OutgoingRecord, input: number) => void): void {
  const { fields, bytes, topics } = packed;
  for (let i = 0; i < packed.count; i++) {
    const f = i * OUT_FIELDS;
    const partition = fields[f + 2]!;
    const timestamp = fields[f + 3]!;
    const headers = packed.headers?.[i];
    const output: OutgoingRecord = {
      topic: topics[fields[f + 1]!]!,
      key: view(bytes, fields[f + 4]!, fields[f + 5]!),
      value: view(bytes, fields[f + 6]!, fields[f + 7]!),
      ...(partition >= 0 ? { partition } : {}),
      ...(Number.isNaN(timestamp) ? {} : { timestamp }),
      ...(headers === undefined ? {} : { headers: headers.map(([key, value]) => ({ key, value: Buffer.from(value.buffer, value.byteOffset, value.byteLength) })) }),
    };
    each(output, fields[f]!);
  }
}

function put(target: Uint8Array, bytes: Uint8Array | null, fields: Float64Array, field: number, at: number): number {
  if (bytes === null) {
    fields[field] = 0;
    fields[field + 1] = -1;
    return at;
  }
  target.set(bytes, at);
  fields[field] = at;
  fields[field + 1] = bytes.length;
  return at + bytes.length;
}

function view(bytes: ArrayBuffer, start: number, length: number): Buffer | null {
  return length < 0 ? null : Buffer.from(bytes, start, length);
}
