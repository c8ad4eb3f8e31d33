import type { Serde, SerdeContext } from './serde.ts';
import { SerdeError, ValueInvalidError, requireBytes, requireValue } from './errors.ts';

/** The bytes are not UTF-8 JSON text. */
export class JsonInvalidError extends SerdeError {
  readonly code = 'JSON_INVALID';
}

/** The JSON parsed, but the validator refused it. */
export class ValueRejectedError extends SerdeError {
  readonly code = 'VALUE_REJECTED';
}

/**
 * Decides whether parsed JSON is a T. Return false (or throw, with a reason
 * in the message) to reject. A type guard `(v: unknown) => v is T` fits here,
 * and so does e.g. `(v) => zodSchema.safeParse(v).success`.
 */
export type JsonValidator = (value: unknown) => boolean;

export interface JsonSerdeOptions {
  /** Checked on deserialize only: input comes from other producers, output is already typed by TypeScript. */
  readonly validate?: JsonValidator;
  /** Map a tombstone (null bytes) to null and back instead of raising NULL_VALUE. */
  readonly nullable?: boolean;
}

const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * JSON text in UTF-8. Numbers go through JSON.parse, so integers beyond 2^53
 * lose precision here; use Avro (bigint longs) for such fields.
 */
export function jsonSerde<T>(options: JsonSerdeOptions & { readonly nullable: true }): Serde<T | null>;
export function jsonSerde<T>(options?: JsonSerdeOptions): Serde<T>;
export function jsonSerde<T>(options: JsonSerdeOptions = {}): Serde<T> | Serde<T | null> {
  const { validate, nullable = false } = options;

  const encode = (value: T, ctx: SerdeContext): Buffer => {
    let text: string | undefined;
    try {
      text = JSON.stringify(value);
    } catch (cause) {
      // BigInt values and cycles land here.
      throw new ValueInvalidError(ctx, `not representable as JSON (${(cause as Error).message})`, [], { cause });
    }
    // JSON.stringify returns undefined for functions and symbols at top level.
    if (text === undefined) throw new ValueInvalidError(ctx, `a ${typeof value} is not representable as JSON`, []);
    return Buffer.from(text, 'utf8');
  };

  const decode = (bytes: Buffer, ctx: SerdeContext): T => {
    let parsed: unknown;
    try {
      // fatal decoding: JSON.parse alone would accept U+FFFD substitutions for broken UTF-8.
      parsed = JSON.parse(decoder.decode(bytes));
    } catch (cause) {
      throw new JsonInvalidError(ctx, 'deserialize', `invalid JSON (${(cause as Error).message})`, { cause });
    }
    if (validate !== undefined) {
      let ok: boolean;
      let cause: unknown;
      try {
        ok = validate(parsed);
      } catch (e) {
        ok = false;
        cause = e;
      }
      if (!ok) {
        const reason = cause instanceof Error ? `: ${cause.message}` : '';
        throw new ValueRejectedError(ctx, 'deserialize', `validator rejected the value${reason}`, { cause });
      }
    }
    return parsed as T;
  };

  if (nullable) {
    const serde: Serde<T | null> = {
      name: 'json',
      serialize: (value, ctx) => (value === null || value === undefined ? null : encode(value, ctx)),
      deserialize: (data, ctx) => (data === null ? null : decode(data, ctx)),
    };
    return serde;
  }
  const serde: Serde<T> = {
    name: 'json',
    serialize: (value, ctx) => encode(requireValue(value, ctx), ctx),
    deserialize: (data, ctx) => decode(requireBytes(data, ctx), ctx),
  };
  return serde;
}
