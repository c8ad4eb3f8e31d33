import type { Resolver, Type } from 'avsc';
import { OnceflowError } from '../errors.ts';
import type { Serde, SerdeContext, SerdeEnvironment } from './serde.ts';
import { SerdeError, SerdeNotPreparedError, requireBytes, requireValue } from './errors.ts';
import { decodeAvroBody, encodeAvroInto, type AvroSerdeOptions } from './avro.ts';
import { loadAvroSchema, parseAvroSchema } from './avro-types.ts';
import {
  RegistryUnavailableError,
  SchemaNotRegisteredError,
  kafkajsRegistryClient,
  type SchemaRegistryClient,
} from './registry-client.ts';

/** First byte is not the Confluent wire format's magic 0: not registry-framed data. */
export class WireMagicByteError extends SerdeError {
  readonly code = 'WIRE_MAGIC_BYTE';
}

/** Fewer than the 5 header bytes (magic + schema id). */
export class WireHeaderTruncatedError extends SerdeError {
  readonly code = 'WIRE_HEADER_TRUNCATED';
}

/** The registry does not know the writer schema id (HTTP 404). */
export class SchemaNotFoundError extends SerdeError {
  readonly code = 'SCHEMA_NOT_FOUND';
}

/** The writer schema exists but cannot be read as the reader schema (not Avro, or not resolvable). */
export class SchemaUnresolvableError extends SerdeError {
  readonly code = 'SCHEMA_UNRESOLVABLE';
}

/** prepare() needs a registry and the environment named none. */
export class RegistryNotConfiguredError extends OnceflowError {
  readonly code = 'REGISTRY_NOT_CONFIGURED';
}

export interface RegistryRetryPolicy {
  /** Total tries per registry call, including the first; default 5. */
  readonly attempts?: number;
  readonly initialDelayMs?: number;
  readonly maxDelayMs?: number;
}

export interface RegistryAvroSerdeOptions extends AvroSerdeOptions {
  /** Subject to register under; default TopicNameStrategy `<topic>-<role>`. */
  readonly subject?: string | ((ctx: SerdeContext) => string);
  /** Register the schema at prepare (default) or only look its id up (SCHEMA_NOT_REGISTERED if absent). */
  readonly autoRegister?: boolean;
  readonly retry?: RegistryRetryPolicy;
  readonly requestTimeoutMs?: number;
  /** A registry client to use instead of one built from SerdeEnvironment.registryUrl (tests, shared clients). */
  readonly client?: SchemaRegistryClient;
  /** How long an id the registry said 404 to stays known-missing before it is asked again; default 60 s. */
  readonly notFoundTtlMs?: number;
}

type WriterEntry =
  | { readonly kind: 'ready'; readonly resolver: Resolver | undefined }
  | { readonly kind: 'missing'; readonly until: number }
  | { readonly kind: 'unusable'; readonly reason: string };

const MAGIC = 0;
const HEADER = 5;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Avro in the Confluent wire format: byte 0, a 4-byte big-endian schema id, the Avro body.
 * All registry I/O happens in prepare (register/look up our schema, once per topic and role)
 * and resolve (fetch an unknown writer schema and build the writer->reader resolver, once
 * per id); serialize and deserialize never wait.
 */
export function registryAvroSerde<T>(options: RegistryAvroSerdeOptions): Serde<T> {
  const longs = options.longs ?? 'number';
  const definition = loadAvroSchema(options.schema);
  const reader = parseAvroSchema(definition, { longs });
  // The registry compares schemas by their text; canonical JSON keeps the id stable across
  // key order or whitespace in the source.
  const schemaText = JSON.stringify(reader.schema({ exportAttrs: true }));
  const autoRegister = options.autoRegister ?? true;
  const attempts = Math.max(1, options.retry?.attempts ?? 5);
  const initialDelay = options.retry?.initialDelayMs ?? 200;
  const maxDelay = options.retry?.maxDelayMs ?? 5_000;
  const notFoundTtl = options.notFoundTtlMs ?? 60_000;

  let client: SchemaRegistryClient | undefined = options.client;
  const idsByContext = new Map<string, number>();
  const writers = new Map<number, WriterEntry>();
  const pending = new Map<number, Promise<void>>();
  // The runtime passes the same context object for a topic; remembering the last one
  // skips the map lookup on the hot path.
  let lastCtx: SerdeContext | undefined;
  let lastId = 0;
  let scratch = Buffer.allocUnsafe(4096);

  const contextKey = (ctx: SerdeContext) => `${ctx.role}\u0000${ctx.topic}`;
  const subjectFor = (ctx: SerdeContext) =>
    typeof options.subject === 'function' ? options.subject(ctx) : (options.subject ?? `${ctx.topic}-${ctx.role}`);

  /** The one retry loop: only transient registry errors are retried, and only `attempts` times. */
  async function withRetry<R>(op: () => Promise<R>): Promise<R> {
    let delay = initialDelay;
    for (let attempt = 1; ; attempt++) {
      try {
        return await op();
      } catch (e) {
        if (!(e instanceof RegistryUnavailableError) || attempt >= attempts) {
          if (e instanceof RegistryUnavailableError) {
            throw new RegistryUnavailableError(`${e.message} (gave up after ${attempt} attempts)`, { cause: e });
          }
          throw e;
        }
        await sleep(delay);
        delay = Math.min(maxDelay, delay * 2);
      }
    }
  }

  function idFor(ctx: SerdeContext): number {
    if (ctx === lastCtx) return lastId;
    const id = idsByContext.get(contextKey(ctx));
    if (id === undefined) {
      throw new SerdeNotPreparedError(`registry Avro serde used on ${ctx.role} of "${ctx.topic}" before prepare()`);
    }
    lastCtx = ctx;
    lastId = id;
    return id;
  }

  async function fetchWriter(id: number): Promise<void> {
    if (client === undefined) {
      throw new SerdeNotPreparedError('registry Avro serde resolve() called before any prepare()');
    }
    const c = client;
    const found = await withRetry(() => c.writerSchema(id));
    if (found.status === 'not-found') {
      writers.set(id, { kind: 'missing', until: Date.now() + notFoundTtl });
      return;
    }
    if (found.status === 'unusable') {
      writers.set(id, { kind: 'unusable', reason: found.reason });
      return;
    }
    writers.set(id, writerEntry(found.type));
  }

  function writerEntry(writer: Type): WriterEntry {
    // equals() compares canonical forms; with no difference there, reading with the
    // reader type directly is both correct and faster than going through a resolver.
    if (writer.equals(reader)) return { kind: 'ready', resolver: undefined };
    try {
      return { kind: 'ready', resolver: reader.createResolver(writer) };
    } catch (e) {
      return { kind: 'unusable', reason: `cannot read it as ${reader.name ?? reader.typeName}: ${(e as Error).message}` };
    }
  }

  /** Header checks shared by resolve (which must not throw) and deserialize (which reports). */
  function headerProblem(data: Buffer, ctx: SerdeContext): SerdeError | undefined {
    if (data.length >= 1 && data[0] !== MAGIC) {
      return new WireMagicByteError(ctx, 'deserialize', `magic byte is ${data[0]}, expected 0 (not Confluent wire format)`);
    }
    if (data.length < HEADER) {
      return new WireHeaderTruncatedError(ctx, 'deserialize', `${data.length} bytes, the wire format header alone is 5`);
    }
    return undefined;
  }

  return {
    name: `registry-avro:${reader.name ?? reader.typeName}`,
    schemaHash: reader.fingerprint('sha256').toString('hex'),

    async prepare(ctx: SerdeContext, env: SerdeEnvironment): Promise<void> {
      if (client === undefined) {
        if (env.registryUrl === undefined || env.registryUrl === '') {
          throw new RegistryNotConfiguredError(
            `registry Avro serde on ${ctx.role} of "${ctx.topic}" needs a schema registry URL (SerdeEnvironment.registryUrl)`,
          );
        }
        client = kafkajsRegistryClient(env.registryUrl, {
          longs,
          ...(options.requestTimeoutMs !== undefined ? { requestTimeoutMs: options.requestTimeoutMs } : {}),
        });
      }
      const c = client;
      const subject = subjectFor(ctx);
      let id: number;
      if (autoRegister) {
        id = await withRetry(() => c.register(subject, schemaText));
      } else {
        const found = await withRetry(() => c.lookup(subject, schemaText));
        if (found === null) {
          throw new SchemaNotRegisteredError(
            `schema ${reader.name ?? reader.typeName} is not registered under subject "${subject}" at ${c.url} (autoRegister is off)`,
          );
        }
        id = found;
      }
      idsByContext.set(contextKey(ctx), id);
      // Records we wrote ourselves need no fetch to be read back.
      writers.set(id, { kind: 'ready', resolver: undefined });
    },

    serialize(value: T, ctx: SerdeContext): Buffer {
      const id = idFor(ctx);
      const v = requireValue(value, ctx);
      let end = encodeAvroInto(reader, v, scratch, HEADER, ctx);
      if (end < 0) {
        // avsc returns minus the missing byte count when the buffer is too small.
        scratch = Buffer.allocUnsafe(Math.max(scratch.length * 2, scratch.length - end));
        end = encodeAvroInto(reader, v, scratch, HEADER, ctx);
      }
      const out = Buffer.allocUnsafe(end);
      scratch.copy(out, HEADER, HEADER, end);
      out[0] = MAGIC;
      out.writeUInt32BE(id, 1);
      return out;
    },

    resolve(data: Buffer | null): Promise<void> | null {
      // Anything deserialize will reject on its own needs no registry round trip.
      if (data === null || data.length < HEADER || data[0] !== MAGIC) return null;
      const id = data.readUInt32BE(1);
      const entry = writers.get(id);
      if (entry !== undefined && (entry.kind !== 'missing' || entry.until > Date.now())) return null;
      let p = pending.get(id);
      if (p === undefined) {
        p = fetchWriter(id).finally(() => pending.delete(id));
        pending.set(id, p);
      }
      return p;
    },

    deserialize(data: Buffer | null, ctx: SerdeContext): T {
      const bytes = requireBytes(data, ctx);
      const problem = headerProblem(bytes, ctx);
      if (problem !== undefined) throw problem;
      const id = bytes.readUInt32BE(1);
      const entry = writers.get(id);
      if (entry === undefined) {
        throw new SerdeNotPreparedError(`writer schema id ${id} on "${ctx.topic}" not resolved: await resolve() first`);
      }
      if (entry.kind === 'missing') {
        throw new SchemaNotFoundError(ctx, 'deserialize', `schema registry has no schema with id ${id}`);
      }
      if (entry.kind === 'unusable') {
        throw new SchemaUnresolvableError(ctx, 'deserialize', `writer schema id ${id}: ${entry.reason}`);
      }
      return decodeAvroBody<T>(reader, bytes, HEADER, ctx, entry.resolver);
    },
  };
}
