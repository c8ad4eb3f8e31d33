import type { Serde } from '../serdes/serde.ts';
import type { SchemaRegistryClient } from '../serdes/registry-client.ts';

/** The `onceflow produce --format` values written in the Confluent wire format through the registry. */
export const REGISTRY_FORMATS = ['avro', 'protobuf', 'json-schema'] as const;
export type RegistryFormat = (typeof REGISTRY_FORMATS)[number];

export const isRegistryFormat = (format: string): format is RegistryFormat => (REGISTRY_FORMATS as readonly string[]).includes(format);

/** The format a `--schema` file implies by its extension, if it implies one. */
export function formatOfSchemaFile(schema: string): RegistryFormat | undefined {
  if (schema.endsWith('.avsc')) return 'avro';
  if (schema.endsWith('.proto')) return 'protobuf';
  if (schema.endsWith('.json')) return 'json-schema';
  return undefined;
}

/**
 * The value serde for a registry format. Imported on demand: Avro, Protobuf, JSON Schema and the
 * registry client cost json and text lines a tenth of a second of start-up.
 */
export async function registryValueSerde(format: RegistryFormat, schema: string, messageName: string | undefined): Promise<Serde<unknown>> {
  switch (format) {
    case 'avro':
      return (await import('../serdes/registry-avro.ts')).registryAvroSerde<unknown>({ schema });
    case 'protobuf':
      return (await import('../serdes/registry-protobuf.ts')).registryProtobufSerde<unknown>({ schema, ...(messageName !== undefined ? { messageName } : {}) });
    case 'json-schema':
      return (await import('../serdes/registry-json-schema.ts')).registryJsonSchemaSerde<unknown>({ schema });
  }
}

/** Turns the body after the 5-byte header into a value, for one writer schema id. */
export type BodyDecoder = (body: Buffer) => unknown;

/**
 * How `onceflow consume` shows a record of a writer schema id, whatever its format: read with the
 * writer's own schema, since the console has no reader schema. Undefined when the registry does
 * not know the id or the schema cannot be used.
 */
export async function writerBodyDecoder(client: SchemaRegistryClient, id: number): Promise<BodyDecoder | undefined> {
  const found = await client.schemaText(id);
  if (found.status === 'not-found') return undefined;
  if (found.schemaType === 'JSON') return (body) => JSON.parse(body.toString('utf8')) as unknown;
  if (found.schemaType === 'AVRO') {
    const writer = await client.writerSchema(id);
    return writer.status === 'found' ? (body) => writer.type.fromBuffer(body) : undefined;
  }
  const { parseProtobufFile, decodeMessageIndexes, messageAt } = await import('../serdes/protobuf-schema.ts');
  const file = parseProtobufFile(found.schema, `schema id ${id}`);
  return (body) => {
    const read = decodeMessageIndexes(body, 0);
    if (typeof read === 'string') throw new Error(read);
    const type = messageAt(file, read.indexes);
    if (type === undefined) throw new Error(`message index [${read.indexes.join(', ')}] names no message`);
    return type.toObject(type.decode(body.subarray(read.bodyStart)), { longs: String, enums: String, defaults: true });
  };
}
