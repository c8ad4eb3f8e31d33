import avro from 'avsc';
import type { Schema as AvscSchema, Type } from 'avsc';
import { OnceflowError } from '../errors.ts';
import { readSchemaFile } from './schema-file.ts';

/**
 * How Avro `long` values appear in TypeScript.
 * - 'number' (default): a JS number; a long outside ±(2^53-1) is refused with
 *   AVRO_LONG_UNSAFE on decode (and VALUE_INVALID on encode) instead of being rounded.
 * - 'bigint': always a bigint on decode; encode accepts bigint or safe-integer numbers.
 * Both read the full 64 bits before deciding, so nothing is rounded on the way.
 */
export type AvroLongMode = 'number' | 'bigint';

/** An Avro schema as JSON (object, union array, or primitive name). */
export type AvroSchemaDefinition = string | { readonly [key: string]: unknown } | readonly unknown[];

/**
 * Where a schema comes from: a definition in code, a URL (file: URL of an `.avsc`),
 * or a string that is either a path ending in `.avsc`, JSON schema text, or a primitive name.
 */
export type AvroSchemaSource = AvroSchemaDefinition | URL;

/** The schema given to an Avro serde could not be read or is not valid Avro. */
export class AvroSchemaError extends OnceflowError {
  readonly code = 'AVRO_SCHEMA_INVALID';
}

const PRIMITIVES = new Set(['null', 'boolean', 'int', 'long', 'float', 'double', 'bytes', 'string']);

/** Reads the schema source into a JSON definition; files are read once, at construction. */
export function loadAvroSchema(source: AvroSchemaSource): AvroSchemaDefinition {
  if (source instanceof URL || (typeof source === 'string' && source.endsWith('.avsc'))) {
    const text = readSchemaFile(source, 'Avro', (message, cause) => new AvroSchemaError(message, { cause }));
    return parseSchemaText(text, String(source));
  }
  if (typeof source === 'string') {
    return PRIMITIVES.has(source) ? source : parseSchemaText(source, 'inline schema text');
  }
  return source;
}

function parseSchemaText(text: string, origin: string): AvroSchemaDefinition {
  try {
    return JSON.parse(text) as AvroSchemaDefinition;
  } catch (cause) {
    throw new AvroSchemaError(`${origin} is not JSON: ${(cause as Error).message}`, { cause });
  }
}

// ---- long -------------------------------------------------------------------

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);
const MAX_I64 = (1n << 63n) - 1n;
const MIN_I64 = -(1n << 63n);

/**
 * Thrown from inside avsc while decoding; the decoder turns it into
 * AvroLongUnsafeError with the topic context avsc does not have.
 */
export class UnsafeLongSignal extends Error {
  constructor(readonly value: bigint) {
    super(`long ${value} is outside the safe integer range of a JS number`);
  }
}

function longBytes(n: bigint): Buffer {
  const buf = Buffer.allocUnsafe(8);
  buf.writeBigInt64LE(n);
  return buf;
}

const compareNumbers = (a: number | bigint, b: number | bigint): number => (a < b ? -1 : a > b ? 1 : 0);

const numberLong = avro.types.LongType.__with({
  fromBuffer(buf: Buffer): number {
    const n = buf.readBigInt64LE();
    if (n > MAX_SAFE || n < MIN_SAFE) throw new UnsafeLongSignal(n);
    return Number(n);
  },
  toBuffer: (n: number): Buffer => longBytes(BigInt(n)),
  fromJSON: (n: number | string): number => Number(n),
  toJSON: (n: number): number => n,
  isValid: (n: unknown): boolean => Number.isSafeInteger(n),
  compare: compareNumbers,
});

const bigintLong = avro.types.LongType.__with({
  fromBuffer: (buf: Buffer): bigint => buf.readBigInt64LE(),
  toBuffer: (n: bigint | number): Buffer => longBytes(BigInt(n)),
  fromJSON: (n: number | string | bigint): bigint => BigInt(n),
  // Only reached for schema defaults and JSON coercion, where avsc needs a JSON value.
  toJSON: (n: bigint): number => Number(n),
  isValid: (n: unknown): boolean =>
    (typeof n === 'bigint' && n >= MIN_I64 && n <= MAX_I64) || Number.isSafeInteger(n),
  compare: compareNumbers,
});

// ---- logical types ------------------------------------------------------------

type SchemaObject = { readonly [key: string]: unknown };
const isObject = (v: unknown): v is SchemaObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** timestamp-millis <-> Date. */
class TimestampMillisType extends avro.types.LogicalType {
  // Underlying reads yield undefined past the end of a truncated body; avsc then
  // reports the truncation itself, so these must not throw on it.
  protected override _fromValue(val: number | bigint | undefined): Date | undefined {
    return val === undefined ? undefined : new Date(Number(val));
  }
  protected override _toValue(val: unknown): number | undefined {
    return val instanceof Date && !Number.isNaN(val.getTime()) ? val.getTime() : undefined;
  }
  protected override _resolve(writer: Type): ((v: unknown) => unknown) | undefined {
    if (writer instanceof TimestampMillisType) return (v) => v;
    const name = writer.typeName;
    if (name === 'long' || name === 'int' || name === 'abstract:long') return (v) => new Date(Number(v));
    return undefined;
  }
}

const UUID_RE = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** uuid stays a string; encoding refuses strings that are not UUIDs. */
class UuidType extends avro.types.LogicalType {
  protected override _fromValue(val: string): string {
    return val;
  }
  protected override _toValue(val: unknown): string | undefined {
    return typeof val === 'string' && UUID_RE.test(val) ? val : undefined;
  }
  protected override _resolve(writer: Type): ((v: unknown) => unknown) | undefined {
    return writer instanceof UuidType || writer.typeName === 'string' ? (v) => v : undefined;
  }
}

const DECIMAL_RE = /^([+-]?)(\d+)(?:\.(\d+))?$/;

/**
 * decimal (bytes or fixed) <-> a decimal string with exactly `scale` fraction digits,
 * e.g. "12.30" for scale 2. A string keeps every digit; numbers are not accepted
 * because a double cannot carry most decimals exactly.
 */
class DecimalType extends avro.types.LogicalType {
  readonly precision: number;
  readonly scale: number;
  private readonly fixedSize: number | undefined;

  constructor(schema: AvscSchema, opts?: unknown) {
    super(schema, opts);
    const s = schema as SchemaObject;
    const precision = s['precision'];
    const scale = s['scale'] ?? 0;
    if (!Number.isInteger(precision) || (precision as number) < 1) throw new Error('decimal needs a positive integer precision');
    if (!Number.isInteger(scale) || (scale as number) < 0 || (scale as number) > (precision as number)) {
      throw new Error('decimal scale must be an integer between 0 and precision');
    }
    this.precision = precision as number;
    this.scale = scale as number;
    const underlying = this.underlyingType;
    if (underlying.typeName === 'fixed') {
      const size = (underlying as unknown as { size: number }).size;
      // A signed size-byte integer holds floor(log10(2^(8*size-1)-1)) full decimal digits.
      const maxPrecision = Math.floor(Math.log10(2) * (8 * size - 1));
      if (this.precision > maxPrecision) throw new Error(`decimal precision ${this.precision} does not fit fixed(${size})`);
      this.fixedSize = size;
    } else if (underlying.typeName === 'bytes') {
      this.fixedSize = undefined;
    } else {
      throw new Error('decimal must be bytes or fixed');
    }
  }

  protected override _fromValue(buf: Buffer | undefined): string | undefined {
    return buf === undefined ? undefined : formatDecimal(fromTwosComplement(buf), this.scale);
  }

  protected override _toValue(val: unknown): Buffer | undefined {
    if (typeof val !== 'string') return undefined;
    const unscaled = parseDecimal(val, this.scale, this.precision);
    if (unscaled === undefined) return undefined;
    return this.fixedSize === undefined ? toTwosComplement(unscaled) : toTwosComplementFixed(unscaled, this.fixedSize);
  }

  protected override _resolve(writer: Type): ((v: unknown) => unknown) | undefined {
    // Same scale means the same unscaled integer means the same number; anything else would need rounding.
    if (writer instanceof DecimalType) return writer.scale === this.scale ? (v) => v : undefined;
    const name = writer.typeName;
    if (name === 'bytes' || name === 'fixed') return (v) => this._fromValue(v as Buffer);
    return undefined;
  }

  protected override _export(schema: AvscSchema): void {
    const attrs = schema as Record<string, unknown>;
    attrs['precision'] = this.precision;
    attrs['scale'] = this.scale;
  }
}

export function formatDecimal(unscaled: bigint, scale: number): string {
  const negative = unscaled < 0n;
  let digits = (negative ? -unscaled : unscaled).toString();
  if (scale === 0) return (negative ? '-' : '') + digits;
  digits = digits.padStart(scale + 1, '0');
  return `${negative ? '-' : ''}${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
}

/** The unscaled integer, or undefined when the text has more precision than the type can hold. */
export function parseDecimal(text: string, scale: number, precision: number): bigint | undefined {
  const m = DECIMAL_RE.exec(text);
  if (m === null) return undefined;
  const [, sign, int = '', frac = ''] = m;
  // Extra fraction digits are fine only when they are zeros: dropping them loses nothing.
  if (frac.length > scale && /[^0]/.test(frac.slice(scale))) return undefined;
  const digits = (int + frac.slice(0, scale).padEnd(scale, '0')).replace(/^0+(?=\d)/, '');
  if (digits !== '0' && digits.length > precision) return undefined;
  const n = BigInt(digits);
  return sign === '-' ? -n : n;
}

function toTwosComplement(n: bigint): Buffer {
  let size = 1;
  while (n >= 1n << BigInt(8 * size - 1) || n < -(1n << BigInt(8 * size - 1))) size++;
  return toTwosComplementFixed(n, size);
}

function toTwosComplementFixed(n: bigint, size: number): Buffer {
  let v = n < 0n ? (1n << BigInt(8 * size)) + n : n;
  const buf = Buffer.alloc(size);
  for (let i = size - 1; i >= 0; i--) {
    buf[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  return buf;
}

function fromTwosComplement(buf: Buffer): bigint {
  if (buf.length === 0) return 0n;
  let v = 0n;
  for (const b of buf) v = (v << 8n) | BigInt(b);
  return (buf[0] as number) & 0x80 ? v - (1n << BigInt(8 * buf.length)) : v;
}

const LOGICAL_TYPES = {
  'timestamp-millis': TimestampMillisType,
  uuid: UuidType,
  decimal: DecimalType,
};

export interface AvroTypeOptions {
  readonly longs?: AvroLongMode;
  /**
   * Fail on a malformed logical type instead of falling back to the underlying type.
   * On for schemas written in this codebase (a typo should be loud), off for writer
   * schemas from the registry, where the Avro spec asks readers to fall back.
   */
  readonly strictLogicalTypes?: boolean;
}

/** avsc options for this serde family; a fresh object each call, because avsc fills `registry` with named types. */
export function avscOptions(options: AvroTypeOptions = {}): Partial<avro.ForSchemaOptions> {
  const long = options.longs === 'bigint' ? bigintLong : numberLong;
  return {
    assertLogicalTypes: options.strictLogicalTypes ?? false,
    logicalTypes: LOGICAL_TYPES,
    // avsc's `registry.long` override only catches the bare "long" name, not {type: "long"};
    // a hook sees both. Logical longs keep avsc's underlying long (range-checked, never rounded).
    typeHook: (schema: AvscSchema) => {
      if (schema === 'long') return long;
      if (isObject(schema) && schema['type'] === 'long') {
        const logical = schema['logicalType'];
        if (typeof logical !== 'string' || !(logical in LOGICAL_TYPES)) return long;
      }
      return undefined;
    },
  };
}

/** Builds the avsc Type for a schema; AVRO_SCHEMA_INVALID if avsc refuses it. */
export function parseAvroSchema(definition: AvroSchemaDefinition, options: AvroTypeOptions = {}): Type {
  try {
    return avro.Type.forSchema(definition as AvscSchema, avscOptions({ strictLogicalTypes: true, ...options }));
  } catch (cause) {
    throw new AvroSchemaError(`invalid Avro schema: ${(cause as Error).message}`, { cause });
  }
}
