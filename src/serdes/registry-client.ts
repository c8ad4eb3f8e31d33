import avro from 'avsc';
import type { Type } from 'avsc';
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import { OnceflowError } from '../errors.ts';
import { avscOptions, type AvroLongMode } from './avro-types.ts';

/**
 * The registry could not be reached or answered 5xx/timeout. Transient: the caller
 * (prepare at start-up, resolve for a record) may retry or fail the task, but must
 * not dead-letter the record over it.
 */
export class RegistryUnavailableError extends OnceflowError {
  readonly code = 'REGISTRY_UNAVAILABLE';
  readonly retriable = true;
}

/** The registry refused the schema under its compatibility rule (HTTP 409). */
export class SchemaIncompatibleError extends OnceflowError {
  readonly code = 'SCHEMA_INCOMPATIBLE';
  constructor(
    readonly subject: string,
    registryMessage: string,
    options?: { cause?: unknown },
  ) {
    super(`schema is not compatible with the versions registered under subject "${subject}": ${registryMessage}`, options);
  }
}

/** The registry found the schema itself unacceptable (HTTP 422). */
export class SchemaInvalidError extends OnceflowError {
  readonly code = 'SCHEMA_INVALID';
}

/** Lookup-only mode (autoRegister: false) and the subject has no such schema. */
export class SchemaNotRegisteredError extends OnceflowError {
  readonly code = 'SCHEMA_NOT_REGISTERED';
}

/** Any other refusal (401/403, unexpected 4xx): configuration, not weather, so not retried. */
export class RegistryRejectedError extends OnceflowError {
  readonly code = 'REGISTRY_REJECTED';
}

export type WriterSchemaLookup =
  | { readonly status: 'found'; readonly type: Type }
  | { readonly status: 'not-found' }
  /** Known to the registry but not something an Avro reader can use (JSON Schema, Protobuf, unparseable). */
  | { readonly status: 'unusable'; readonly reason: string };

/** The registry's name for a schema's format (absent in its answers means AVRO). */
export type RegistrySchemaType = 'AVRO' | 'PROTOBUF' | 'JSON';

export type RawSchemaLookup =
  | { readonly status: 'found'; readonly schemaType: RegistrySchemaType; readonly schema: string }
  | { readonly status: 'not-found' };

/**
 * The registry operations the registry serdes need. Errors are already classified:
 * RegistryUnavailableError for transient trouble, the others for definite answers.
 */
export interface SchemaRegistryClient {
  readonly url: string;
  /** Registers the schema text under the subject (idempotent for an identical schema) and returns its id. */
  register(subject: string, schema: string, schemaType?: RegistrySchemaType): Promise<number>;
  /** The id of this exact schema under the subject, or null if it is not registered there. */
  lookup(subject: string, schema: string, schemaType?: RegistrySchemaType): Promise<number | null>;
  /** The writer schema for an id, parsed as Avro for the given long mode. */
  writerSchema(id: number): Promise<WriterSchemaLookup>;
  /** The schema for an id as the registry stores it: Protobuf and JSON Schema readers parse it themselves. */
  schemaText(id: number): Promise<RawSchemaLookup>;
}

export interface KafkajsRegistryClientOptions {
  readonly longs?: AvroLongMode;
  /** Per HTTP request; a registry that stops answering must become REGISTRY_UNAVAILABLE, not a hang. */
  readonly requestTimeoutMs?: number;
}

type ClientArgs = ConstructorParameters<typeof SchemaRegistry>[0];
type Middleware = NonNullable<ClientArgs['middlewares']>[number];

/** What the library's HTTP client (mappersmith) gives back for a register call. */
interface RegistryApi {
  Subject: {
    register(params: { subject: string; body: { schema: string; schemaType?: string } }): Promise<{ data(): { id: number } }>;
  };
  Schema: {
    find(params: { id: number }): Promise<{ data(): { schema: string; schemaType?: string } }>;
  };
}

const SCHEMA_TYPES: ReadonlySet<string> = new Set<RegistrySchemaType>(['AVRO', 'PROTOBUF', 'JSON']);

/** The error the library's HTTP layer throws for any non-2xx answer and for network failures. */
interface HttpError {
  readonly status: number;
  readonly message: string;
}
const isHttpError = (e: unknown): e is HttpError =>
  e instanceof Error && typeof (e as { status?: unknown }).status === 'number';

// The library's error classes are not exported from its entry point; their names are stable.
const isLibraryError = (e: unknown, name: string): e is Error => e instanceof Error && e.name === name;

/**
 * The one place registry failures are classified. mappersmith reports network errors and
 * timeouts as a synthetic status 400 whose message carries the socket error rather than a
 * registry JSON message ("Error, status 400: connect ECONNREFUSED ..."); a real 400 from
 * the registry carries its own message, so the marker tells them apart.
 */
function classify(e: unknown, url: string, what: string, subject?: string): OnceflowError {
  if (e instanceof OnceflowError) return e;
  if (!isHttpError(e)) {
    return new RegistryUnavailableError(`schema registry ${url}: ${what} failed: ${String((e as Error)?.message ?? e)}`, {
      cause: e,
    });
  }
  const clientSide = e.status === 400 && e.message.includes('Error, status 400');
  if (clientSide || e.status >= 500 || e.status === 408 || e.status === 429) {
    return new RegistryUnavailableError(`schema registry ${url}: ${what} failed: ${e.message}`, { cause: e });
  }
  if (e.status === 409 && subject !== undefined) return new SchemaIncompatibleError(subject, e.message, { cause: e });
  if (e.status === 422) return new SchemaInvalidError(`schema registry ${url} refused the schema: ${e.message}`, { cause: e });
  return new RegistryRejectedError(`schema registry ${url}: ${what} failed with HTTP ${e.status}: ${e.message}`, {
    cause: e,
  });
}

/** A SchemaRegistryClient on @kafkajs/confluent-schema-registry (Confluent REST API, also Apicurio's ccompat API). */
export function kafkajsRegistryClient(url: string, options: KafkajsRegistryClientOptions = {}): SchemaRegistryClient {
  const timeout = options.requestTimeoutMs ?? 10_000;
  const timeoutMiddleware: Middleware = () => ({
    prepareRequest: (next) => next().then((req) => req.enhance({ timeout })),
  });
  const registry = new SchemaRegistry(
    // Retries are the serde's job (bounded, and only for transient errors); the library's
    // own retry only covers 5xx, not connection refused, so it is switched off.
    { host: url, retry: { retries: 0 }, middlewares: [timeoutMiddleware] },
    // Writer schemas get the same logical types and long mode as the reader, so the
    // resolver maps like to like; lenient logical types as the Avro spec asks of readers.
    { forSchemaOptions: avscOptions({ longs: options.longs ?? 'number', strictLogicalTypes: false }) },
  );
  // SchemaRegistry.register() first compares the subject's compatibility level to its own
  // default and throws on mismatch, and PUTs a subject-level config on first use. Apicurio
  // reports NONE for subjects without their own level, so that check fails there, and the
  // PUT would change registry policy. Registering through the library's HTTP client
  // (private `api`, stable in the pinned 3.9.x) keeps the registry's own rule in charge.
  const api = (registry as unknown as { api: RegistryApi }).api;

  return {
    url,
    async register(subject, schema, schemaType = 'AVRO') {
      try {
        // The registry takes a missing schemaType as AVRO; older registries reject the field for Avro.
        const body = schemaType === 'AVRO' ? { schema } : { schema, schemaType };
        const res = await api.Subject.register({ subject, body });
        return res.data().id;
      } catch (e) {
        throw classify(e, url, `registering a schema under "${subject}"`, subject);
      }
    },
    async lookup(subject, schema, schemaType = 'AVRO') {
      try {
        return await registry.getRegistryIdBySchema(subject, { type: SchemaType[schemaType], schema });
      } catch (e) {
        // The library turns exactly the 404 answer into a bare ConfluentSchemaRegistryError.
        if (isLibraryError(e, 'ConfluentSchemaRegistryError') && !isHttpError(e)) return null;
        throw classify(e, url, `looking up a schema under "${subject}"`);
      }
    },
    async writerSchema(id) {
      let schema: unknown;
      try {
        schema = await registry.getSchema(id);
      } catch (e) {
        if (isHttpError(e) && e.status === 404) return { status: 'not-found' };
        if (isLibraryError(e, 'ConfluentSchemaRegistryArgumentError')) return { status: 'unusable', reason: e.message };
        throw classify(e, url, `fetching schema id ${id}`);
      }
      if (!avro.Type.isType(schema)) return { status: 'unusable', reason: `schema id ${id} is not an Avro schema` };
      return { status: 'found', type: schema as Type };
    },
    async schemaText(id) {
      try {
        const found = (await api.Schema.find({ id })).data();
        const schemaType = found.schemaType ?? 'AVRO';
        if (!SCHEMA_TYPES.has(schemaType)) {
          throw new RegistryRejectedError(`schema registry ${url}: schema id ${id} has the unknown type ${schemaType}`);
        }
        return { status: 'found', schemaType: schemaType as RegistrySchemaType, schema: found.schema };
      } catch (e) {
        if (isHttpError(e) && e.status === 404) return { status: 'not-found' };
        throw classify(e, url, `fetching schema id ${id}`);
      }
    },
  };
}
