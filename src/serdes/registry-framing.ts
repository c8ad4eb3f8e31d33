import { OnceflowError } from '../errors.ts';
import type { SerdeContext, SerdeEnvironment } from './serde.ts';
import { SerdeError, SerdeNotPreparedError } from './errors.ts';
import {
  RegistryUnavailableError,
  SchemaNotRegisteredError,
  kafkajsRegistryClient,
  type KafkajsRegistryClientOptions,
  type RegistrySchemaType,
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

/** The writer schema exists but cannot be read as the reader schema (another format, or not resolvable). */
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

/** What every registry serde (Avro, Protobuf, JSON Schema) takes about the registry itself. */
export interface RegistrySerdeOptions {
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

/** What a format knows of one writer schema id: how to read it, or why it cannot. */
export type WriterEntry<W> =
  | { readonly kind: 'ready'; readonly writer: W }
  | { readonly kind: 'missing'; readonly until: number }
  | { readonly kind: 'unusable'; readonly reason: string };

export type WriterLoad<W> = { readonly kind: 'ready'; readonly writer: W } | { readonly kind: 'missing' } | { readonly kind: 'unusable'; readonly reason: string };

export interface RegistryFormat<W> {
  /** 'Avro', 'Protobuf', 'JSON Schema': for messages. */
  readonly label: string;
  readonly schemaType: RegistrySchemaType;
  /** The text registered; the registry compares schemas by text, so it must be stable. */
  readonly schemaText: string;
  /** The reader schema's name, for messages. */
  readonly schemaName: string;
  /** How records this serde wrote itself are read: no fetch needed for them. */
  readonly ownWriter: W;
  readonly clientOptions?: KafkajsRegistryClientOptions;
  /** Fetches and judges a writer schema the serde has not seen. */
  loadWriter(client: SchemaRegistryClient, id: number): Promise<WriterLoad<W>>;
}

export const WIRE_MAGIC = 0;
export const WIRE_HEADER = 5;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * The Confluent wire format's registry side, shared by every registry serde: byte 0 and a
 * 4-byte big-endian schema id before the format's body. All registry I/O happens in prepare
 * (register/look up our schema, once per topic and role) and resolve (fetch an unknown writer
 * schema, once per id); serialize and deserialize never wait.
 */
export function registryFraming<W>(options: RegistrySerdeOptions, format: RegistryFormat<W>) {
  const autoRegister = options.autoRegister ?? true;
  const attempts = Math.max(1, options.retry?.attempts ?? 5);
  const initialDelay = options.retry?.initialDelayMs ?? 200;
  const maxDelay = options.retry?.maxDelayMs ?? 5_000;
  const notFoundTtl = options.notFoundTtlMs ?? 60_000;

  let client: SchemaRegistryClient | undefined = options.client;
  const idsByContext = new Map<string, number>();
  const writers = new Map<number, WriterEntry<W>>();
  const pending = new Map<number, Promise<void>>();
  // The runtime passes the same context object for a topic; remembering the last one
  // skips the map lookup on the hot path.
  let lastCtx: SerdeContext | undefined;
  let lastId = 0;

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

  async function fetchWriter(id: number): Promise<void> {
    if (client === undefined) {
      throw new SerdeNotPreparedError(`registry ${format.label} serde resolve() called before any prepare()`);
    }
    const c = client;
    const loaded = await withRetry(() => format.loadWriter(c, id));
    writers.set(id, loaded.kind === 'missing' ? { kind: 'missing', until: Date.now() + notFoundTtl } : loaded);
  }

  /** Header checks shared by resolve (which must not throw) and deserialize (which reports). */
  function headerProblem(data: Buffer, ctx: SerdeContext): SerdeError | undefined {
    if (data.length >= 1 && data[0] !== WIRE_MAGIC) {
      return new WireMagicByteError(ctx, 'deserialize', `magic byte is ${data[0]}, expected 0 (not Confluent wire format)`);
    }
    if (data.length < WIRE_HEADER) {
      return new WireHeaderTruncatedError(ctx, 'deserialize', `${data.length} bytes, the wire format header alone is 5`);
    }
    return undefined;
  }

  return {
    async prepare(ctx: SerdeContext, env: SerdeEnvironment): Promise<void> {
      if (client === undefined) {
        if (env.registryUrl === undefined || env.registryUrl === '') {
          throw new RegistryNotConfiguredError(
            `registry ${format.label} serde on ${ctx.role} of "${ctx.topic}" needs a schema registry URL (SerdeEnvironment.registryUrl)`,
          );
        }
        client = kafkajsRegistryClient(env.registryUrl, {
          ...format.clientOptions,
          ...(options.requestTimeoutMs !== undefined ? { requestTimeoutMs: options.requestTimeoutMs } : {}),
        });
      }
      const c = client;
      const subject = subjectFor(ctx);
      let id: number;
      if (autoRegister) {
        id = await withRetry(() => c.register(subject, format.schemaText, format.schemaType));
      } else {
        const found = await withRetry(() => c.lookup(subject, format.schemaText, format.schemaType));
        if (found === null) {
          throw new SchemaNotRegisteredError(
            `${format.label} schema ${format.schemaName} is not registered under subject "${subject}" at ${c.url} (autoRegister is off)`,
          );
        }
        id = found;
      }
      idsByContext.set(contextKey(ctx), id);
      writers.set(id, { kind: 'ready', writer: format.ownWriter });
    },

    /** The schema id this serde writes on a topic and role; set by prepare. */
    idFor(ctx: SerdeContext): number {
      if (ctx === lastCtx) return lastId;
      const id = idsByContext.get(contextKey(ctx));
      if (id === undefined) {
        throw new SerdeNotPreparedError(`registry ${format.label} serde used on ${ctx.role} of "${ctx.topic}" before prepare()`);
      }
      lastCtx = ctx;
      lastId = id;
      return id;
    },

    /** Five header bytes with the id, then room for a body from `HEADER`. */
    writeHeader(out: Buffer, id: number): void {
      out[0] = WIRE_MAGIC;
      out.writeUInt32BE(id, 1);
    },

    resolve(data: Buffer | null): Promise<void> | null {
      // Anything deserialize will reject on its own needs no registry round trip.
      if (data === null || data.length < WIRE_HEADER || data[0] !== WIRE_MAGIC) return null;
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

    /** The writer of a framed record, or the typed error that dead-letters it. */
    writerOf(bytes: Buffer, ctx: SerdeContext): W {
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
      return entry.writer;
    },
  };
}
