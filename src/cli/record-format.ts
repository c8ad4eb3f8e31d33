import type { IncomingRecord, RecordHeader } from '../core/records.ts';
import { OnceflowError } from '../errors.ts';
import type { RecordToProduce } from '../kafka/produce-records.ts';
import type { SchemaRegistryClient } from '../serdes/registry-client.ts';
import { isRegistryFormat, registryValueSerde, writerBodyDecoder, type BodyDecoder, type RegistryFormat } from './registry-formats.ts';

/** A line `onceflow produce` cannot turn into a record: said with its line number, nothing produced. */
export class ProduceInputError extends OnceflowError {
  readonly code = 'PRODUCE_INPUT_INVALID';
}

export type ProduceFormat = 'json' | 'text' | RegistryFormat;

export interface LineEncoderOptions {
  readonly topic: string;
  readonly format: ProduceFormat;
  /** The key is this field of each value (every format but text). */
  readonly keyField?: string;
  /** Each line is `{"key": ..., "value": ..., "headers": {...}}`. */
  readonly keyed?: boolean;
  /** The value schema file (`.avsc`, `.proto`, `.json`) of a registry format: registered under `<topic>-value`. */
  readonly schema?: string;
  /** The Protobuf message of the values; default the schema's first. */
  readonly messageName?: string;
  readonly registryUrl?: string;
}

export type LineEncoder = (line: string, lineNumber: number) => RecordToProduce;

function invalid(lineNumber: number, why: string): never {
  throw new ProduceInputError(`line ${lineNumber}: ${why}`);
}

function parseJson(line: string, lineNumber: number): unknown {
  try {
    return JSON.parse(line) as unknown;
  } catch (e) {
    return invalid(lineNumber, `not JSON (${(e as Error).message})`);
  }
}

const keyText = (key: unknown): Buffer | null => (key === null || key === undefined ? null : Buffer.from(typeof key === 'string' ? key : JSON.stringify(key)));

/** Turns each input line into a record: JSON or text values, or a registry format (Confluent wire format) from a JSON line. */
export async function lineEncoder(opts: LineEncoderOptions): Promise<LineEncoder> {
  let encodeValue: (value: unknown, lineNumber: number) => Buffer | null;
  if (isRegistryFormat(opts.format)) {
    if (!opts.schema) throw new ProduceInputError(`--format ${opts.format} needs --schema <file>`);
    const serde = await registryValueSerde(opts.format, opts.schema, opts.messageName);
    const ctx = { topic: opts.topic, role: 'value' } as const;
    await serde.prepare?.(ctx, opts.registryUrl ? { registryUrl: opts.registryUrl } : {});
    encodeValue = (value, lineNumber) => {
      try {
        return serde.serialize(value, ctx);
      } catch (e) {
        return invalid(lineNumber, (e as Error).message);
      }
    };
  } else if (opts.format === 'text') {
    encodeValue = (value, lineNumber) => (value === null ? null : typeof value === 'string' ? Buffer.from(value) : invalid(lineNumber, 'a text value must be a string'));
  } else {
    encodeValue = (value) => (value === null ? null : Buffer.from(JSON.stringify(value)));
  }

  return (line, lineNumber) => {
    if (opts.keyed) {
      const envelope = parseJson(line, lineNumber);
      if (typeof envelope !== 'object' || envelope === null || !('value' in envelope)) invalid(lineNumber, 'with --keyed, each line is {"key": ..., "value": ..., "headers": {...}}');
      const { key, value, headers } = envelope as { key?: unknown; value: unknown; headers?: unknown };
      return { key: keyText(key), value: encodeValue(value, lineNumber), headers: headerList(headers, lineNumber) };
    }
    const value = opts.format === 'text' ? line : parseJson(line, lineNumber);
    let key: Buffer | null = null;
    if (opts.keyField !== undefined) {
      if (typeof value !== 'object' || value === null || !(opts.keyField in value)) invalid(lineNumber, `no field "${opts.keyField}" for the key`);
      key = keyText((value as Record<string, unknown>)[opts.keyField]);
    }
    return { key, value: encodeValue(value, lineNumber) };
  };
}

function headerList(headers: unknown, lineNumber: number): RecordHeader[] {
  if (headers === undefined || headers === null) return [];
  if (typeof headers !== 'object' || Array.isArray(headers)) invalid(lineNumber, 'headers must be an object of strings');
  return Object.entries(headers as Record<string, unknown>).map(([key, v]) => ({ key, value: Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)) }));
}

/** A record as `onceflow consume` prints it: one JSON object per line. */
export interface PrintedRecord {
  readonly partition: number;
  readonly offset: number;
  readonly timestamp: string;
  readonly key: unknown;
  readonly value: unknown;
  readonly headers?: Readonly<Record<string, string>>;
}

const WIRE_MAGIC = 0;
const WIRE_HEADER = 5;

/**
 * Decodes what it recognises, in this order: the registry formats (magic byte 0 and a schema id the
 * registry knows: Avro, Protobuf, JSON Schema), JSON, UTF-8 text; anything else is shown as `{"base64": ...}`.
 */
export class RecordDecoder {
  // Made on the first record in the wire format: the client's import costs a tenth of a second of start-up.
  #registry: Promise<SchemaRegistryClient> | undefined;
  readonly #registryUrl: string | undefined;
  readonly #writers = new Map<number, Promise<BodyDecoder | undefined>>();

  constructor(registryUrl: string | undefined) {
    this.#registryUrl = registryUrl;
  }

  async print(r: IncomingRecord, withHeaders: boolean): Promise<PrintedRecord> {
    return {
      partition: r.partition,
      offset: r.offset,
      timestamp: new Date(r.timestamp).toISOString(),
      key: await this.decode(r.key),
      value: await this.decode(r.value),
      ...(withHeaders ? { headers: Object.fromEntries(r.headers.map((h) => [h.key, h.value.toString()])) } : {}),
    };
  }

  async decode(data: Buffer | null): Promise<unknown> {
    if (data === null) return null;
    if (this.#registryUrl !== undefined && data.length >= WIRE_HEADER && data[0] === WIRE_MAGIC) {
      const writer = await this.#writer(data.readInt32BE(1));
      if (writer) {
        try {
          return writer(data.subarray(WIRE_HEADER));
        } catch {
          // Not of its schema after all: shown as bytes below.
        }
      }
    }
    const text = data.toString('utf8');
    if (Buffer.byteLength(text) === data.length && !text.includes('\uFFFD')) {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        return text;
      }
    }
    return { base64: data.toString('base64') };
  }

  #writer(id: number): Promise<BodyDecoder | undefined> {
    let found = this.#writers.get(id);
    if (!found) {
      const url = this.#registryUrl!;
      this.#registry ??= import('../serdes/registry-client.ts').then((m) => m.kafkajsRegistryClient(url));
      found = this.#registry.then((registry) => writerBodyDecoder(registry, id)).catch(() => undefined);
      this.#writers.set(id, found);
    }
    return found;
  }
}

/** JSON for values Avro decodes to: bytes as base64, 64-bit integers as text. */
export function printedJson(record: PrintedRecord): string {
  // A Buffer reaches the replacer already turned into {type: 'Buffer', data} by its toJSON.
  return JSON.stringify(record, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : isBufferJson(v) ? Buffer.from(v.data).toString('base64') : v));
}

function isBufferJson(v: unknown): v is { type: 'Buffer'; data: number[] } {
  return typeof v === 'object' && v !== null && (v as { type?: unknown }).type === 'Buffer' && Array.isArray((v as { data?: unknown }).data);
}
