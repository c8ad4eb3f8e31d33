import type { Resolver, Type } from 'avsc';
import type { Serde, SerdeContext } from './serde.ts';
import { SerdeError, ValueInvalidError, requireBytes, requireValue } from './errors.ts';
import {
  UnsafeLongSignal,
  loadAvroSchema,
  parseAvroSchema,
  type AvroLongMode,
  type AvroSchemaSource,
} from './avro-types.ts';

/** The Avro body ended before the value did. */
export class AvroTruncatedError extends SerdeError {
  readonly code = 'AVRO_TRUNCATED';
}

/** The value decoded but bytes were left over: the writer used a different schema than the one we read with. */
export class AvroTrailingBytesError extends SerdeError {
  readonly code = 'AVRO_TRAILING_BYTES';
}

/** The body is not valid Avro for the schema (bad union/enum index, negative length, ...). */
export class AvroInvalidError extends SerdeError {
  readonly code = 'AVRO_INVALID';
}

/** A long outside ±(2^53-1) met a serde in 'number' long mode; decoding it would round it. */
export class AvroLongUnsafeError extends SerdeError {
  readonly code = 'AVRO_LONG_UNSAFE';
  constructor(
    ctx: SerdeContext,
    readonly value: bigint,
  ) {
    super(ctx, 'deserialize', `long ${value} does not fit a JS number without rounding (use longs: 'bigint')`);
  }
}

export interface AvroSerdeOptions {
  /** Schema object, JSON text, a path ending in `.avsc`, or a file URL. */
  readonly schema: AvroSchemaSource;
  /** See AvroLongMode; default 'number'. */
  readonly longs?: AvroLongMode;
}

/**
 * Encodes `value` into an Avro body. Validation happens inside avsc's writer;
 * the path walk runs only after it failed, to say where.
 */
export function encodeAvroBody(type: Type, value: unknown, ctx: SerdeContext): Buffer {
  try {
    return type.toBuffer(value);
  } catch (cause) {
    throw invalidValue(type, value, ctx, cause);
  }
}

/** Same as encodeAvroBody, into `target` at `pos`; returns the end position, or a negative size shortfall as avsc does. */
export function encodeAvroInto(type: Type, value: unknown, target: Buffer, pos: number, ctx: SerdeContext): number {
  try {
    return type.encode(value, target, pos);
  } catch (cause) {
    throw invalidValue(type, value, ctx, cause);
  }
}

function invalidValue(type: Type, value: unknown, ctx: SerdeContext, cause: unknown): ValueInvalidError {
  const paths: string[] = [];
  type.isValid(value, { errorHook: (path) => paths.push(path.length === 0 ? '(root)' : path.join('.')) });
  return new ValueInvalidError(ctx, `value does not match Avro schema ${type.name ?? type.typeName}`, paths, { cause });
}

/** The one place Avro body decoding errors are raised, for plain and registry Avro alike. */
export function decodeAvroBody<T>(
  type: Type,
  body: Buffer,
  start: number,
  ctx: SerdeContext,
  resolver?: Resolver,
): T {
  let decoded: { value: unknown; offset: number };
  try {
    decoded = type.decode(body, start, resolver);
  } catch (cause) {
    if (cause instanceof UnsafeLongSignal) throw new AvroLongUnsafeError(ctx, cause.value);
    throw new AvroInvalidError(ctx, 'deserialize', `malformed Avro body (${(cause as Error).message})`, { cause });
  }
  // avsc reports "ran out of bytes" as offset -1 rather than throwing.
  if (decoded.offset < 0) {
    throw new AvroTruncatedError(ctx, 'deserialize', `Avro body of ${body.length - start} bytes ends before the value`);
  }
  if (decoded.offset < body.length) {
    throw new AvroTrailingBytesError(
      ctx,
      'deserialize',
      `${body.length - decoded.offset} bytes left after the value (writer schema differs from reader schema?)`,
    );
  }
  return decoded.value as T;
}

/** Plain Avro bodies, no framing: both sides must agree on the schema out of band. */
export function avroSerde<T>(options: AvroSerdeOptions): Serde<T> {
  const type = parseAvroSchema(loadAvroSchema(options.schema), { longs: options.longs ?? 'number' });
  return {
    name: `avro:${type.name ?? type.typeName}`,
    schemaHash: type.fingerprint('sha256').toString('hex'),
    serialize: (value, ctx) => encodeAvroBody(type, requireValue(value, ctx), ctx),
    deserialize: (data, ctx) => decodeAvroBody<T>(type, requireBytes(data, ctx), 0, ctx),
  };
}
