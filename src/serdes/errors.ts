import { OnceflowError } from '../errors.ts';
import type { SerdeContext } from './serde.ts';

export type SerdeOperation = 'serialize' | 'deserialize';

/**
 * A record (or a value about to become one) that this serde cannot convert.
 * Retrying cannot help, so the task engine dead-letters the record instead of
 * stopping the partition; infrastructure trouble (an unreachable registry) is
 * deliberately NOT a SerdeError, see RegistryUnavailableError.
 */
export abstract class SerdeError extends OnceflowError {
  readonly retriable = false;
  readonly topic: string;
  readonly role: SerdeContext['role'];
  readonly operation: SerdeOperation;
  constructor(ctx: SerdeContext, operation: SerdeOperation, detail: string, options?: { cause?: unknown }) {
    super(`cannot ${operation} ${ctx.role} on topic "${ctx.topic}": ${detail}`, options);
    this.topic = ctx.topic;
    this.role = ctx.role;
    this.operation = operation;
  }
}

/** A tombstone (null bytes) reached a serde that has no null value, or null was passed to serialize. */
export class NullValueError extends SerdeError {
  readonly code = 'NULL_VALUE';
  constructor(ctx: SerdeContext, operation: SerdeOperation) {
    super(ctx, operation, operation === 'deserialize' ? 'record has no bytes (null)' : 'value is null or undefined');
  }
}

/**
 * The single place NULL_VALUE is raised: every serde without a null mapping
 * funnels its input through here.
 */
export function requireBytes(data: Buffer | null, ctx: SerdeContext): Buffer {
  if (data === null) throw new NullValueError(ctx, 'deserialize');
  return data;
}

export function requireValue<T>(value: T | null | undefined, ctx: SerdeContext): T {
  if (value === null || value === undefined) throw new NullValueError(ctx, 'serialize');
  return value;
}

/** The value handed to serialize does not fit the format (not JSON-representable, not matching the Avro schema). */
export class ValueInvalidError extends SerdeError {
  readonly code = 'VALUE_INVALID';
  /** Paths (field names / indexes) of the offending parts, when the format can tell. */
  readonly paths: readonly string[];
  constructor(ctx: SerdeContext, detail: string, paths: readonly string[], options?: { cause?: unknown }) {
    super(ctx, 'serialize', paths.length > 0 ? `${detail} at ${paths.join(', ')}` : detail, options);
    this.paths = paths;
  }
}

/**
 * serialize/deserialize ran before the async step it depends on (prepare, resolve).
 * That is a bug in the caller, not a bad record, so it is not a SerdeError
 * and must not be dead-lettered.
 */
export class SerdeNotPreparedError extends OnceflowError {
  readonly code = 'SERDE_NOT_PREPARED';
}

/** A Protobuf reader schema that cannot be used: unreadable, unparseable, with imports, or without the named message. */
export class ProtobufSchemaError extends OnceflowError {
  readonly code = 'PROTOBUF_SCHEMA_INVALID';
}

/** The bytes after the wire header are not a Protobuf message of the reader's type (message indexes or body). */
export class ProtobufInvalidError extends SerdeError {
  readonly code = 'PROTOBUF_INVALID';
}

/** A JSON Schema reader schema that cannot be used: unreadable, not JSON, or refused by the validator. */
export class JsonSchemaError extends OnceflowError {
  readonly code = 'JSON_SCHEMA_INVALID';
}

/** The record is JSON but does not validate against the reader's JSON Schema. */
export class JsonSchemaViolationError extends SerdeError {
  readonly code = 'JSON_SCHEMA_VIOLATION';
  /** JSON Pointer paths of the offending parts, as the validator names them. */
  readonly paths: readonly string[];
  constructor(ctx: SerdeContext, detail: string, paths: readonly string[]) {
    super(ctx, 'deserialize', detail);
    this.paths = paths;
  }
}
