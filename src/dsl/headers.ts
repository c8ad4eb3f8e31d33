import type { RecordHeader } from '../core/records.ts';

/** A header value a stage may set: text is written as UTF-8, a Buffer as it is. */
export type HeaderValue = string | Buffer;

/**
 * The headers of a record, read-only: `with` and `without` return new ones. Kafka allows a name to
 * repeat; `string` and `bytes` read the last value of a name, `strings` every one. onceflow's own
 * lineage header is never among them (it is the `lineage` of the record context, read only when asked).
 */
export class RecordHeaders {
  static readonly EMPTY = new RecordHeaders([]);

  /** Headers whose values are the given strings (UTF-8), in the object's order. */
  static of(values: Readonly<Record<string, HeaderValue>>): RecordHeaders {
    return new RecordHeaders(Object.entries(values).map(([key, value]) => ({ key, value: toBuffer(value) })));
  }

  constructor(readonly list: readonly RecordHeader[]) {}

  get size(): number {
    return this.list.length;
  }

  has(name: string): boolean {
    return this.list.some((h) => h.key === name);
  }

  bytes(name: string): Buffer | undefined {
    for (let i = this.list.length - 1; i >= 0; i--) if (this.list[i]!.key === name) return this.list[i]!.value;
    return undefined;
  }

  /** The last value of `name` as UTF-8 text. */
  string(name: string): string | undefined {
    return this.bytes(name)?.toString('utf8');
  }

  /** Every value of `name`, in record order. */
  strings(name: string): string[] {
    return this.list.filter((h) => h.key === name).map((h) => h.value.toString('utf8'));
  }

  names(): string[] {
    return [...new Set(this.list.map((h) => h.key))];
  }

  /** Name to last value, as text. */
  toObject(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const h of this.list) out[h.key] = h.value.toString('utf8');
    return out;
  }

  /** These headers with `name` set to `value` alone (earlier values of the name dropped). */
  with(name: string, value: HeaderValue): RecordHeaders {
    return new RecordHeaders([...this.list.filter((h) => h.key !== name), { key: name, value: toBuffer(value) }]);
  }

  /** These headers with one more value of `name`, earlier ones kept. */
  append(name: string, value: HeaderValue): RecordHeaders {
    return new RecordHeaders([...this.list, { key: name, value: toBuffer(value) }]);
  }

  without(name: string): RecordHeaders {
    return new RecordHeaders(this.list.filter((h) => h.key !== name));
  }
}

function toBuffer(value: HeaderValue): Buffer {
  return typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
}

/**
 * What a stage function may know of the record it processes besides its key and value, passed as the
 * last argument (`(key, value, ctx)`, `(value, ctx)`). One object per task, reused for every record:
 * keep nothing of it beyond the call. Its headers are decoded only when read.
 */
export interface RecordContext {
  /** The headers the record carries at this stage: as read, or as an earlier `setHeaders` left them. */
  readonly headers: RecordHeaders;
  /** onceflow's lineage header of the record (`<topic>/<partition>/<offset>#<seq>`), for a record read from a repartition topic or an output of onceflow; hidden from `headers`. */
  readonly lineage: string | undefined;
  /** Where the record being processed was read. */
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  /** Its event time. */
  readonly timestamp: number;
}

/** What a `setHeaders` function returns: the headers everything downstream of it carries. */
export type HeadersUpdate = RecordHeaders | Readonly<Record<string, HeaderValue>>;

export function toHeaderList(update: HeadersUpdate): readonly RecordHeader[] {
  return update instanceof RecordHeaders ? update.list : RecordHeaders.of(update).list;
}
