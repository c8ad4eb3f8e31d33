import type { Serde, SerdeContext, SerdeEnvironment } from './serde.ts';
import { JsonSchemaViolationError, ValueInvalidError, requireBytes, requireValue } from './errors.ts';
import { jsonSerde } from './json.ts';
import { compileJsonSchema, loadJsonSchema, violations, type JsonSchemaSource } from './json-schema.ts';
import { WIRE_HEADER, registryFraming, type RegistrySerdeOptions } from './registry-framing.ts';

export interface RegistryJsonSchemaSerdeOptions extends RegistrySerdeOptions {
  /** The JSON Schema: an object, JSON text, or a path ending in `.json`; draft-07 unless `$schema` names 2019-09 or 2020-12. */
  readonly schema: JsonSchemaSource;
}

/**
 * JSON in the Confluent wire format: byte 0, the 4-byte schema id, UTF-8 JSON text.
 *
 * JSON has no writer-to-reader resolution: whatever schema a record was written with, it is read
 * if its JSON validates against the reader's schema (absent properties with a `default` are
 * filled in), and dead-lettered with JSON_SCHEMA_VIOLATION if not. The writer schema is fetched
 * only to know the id is a JSON Schema at all.
 */
export function registryJsonSchemaSerde<T>(options: RegistryJsonSchemaSerdeOptions): Serde<T> {
  const schema = loadJsonSchema(options.schema);
  const validate = compileJsonSchema(schema);
  const title = (schema as { title?: unknown }).title;
  const schemaName = typeof title === 'string' ? title : 'JSON Schema';
  const text = jsonSerde<T>();

  const framing = registryFraming<undefined>(options, {
    label: 'JSON Schema',
    schemaType: 'JSON',
    schemaText: JSON.stringify(schema),
    schemaName,
    ownWriter: undefined,
    async loadWriter(client, id) {
      const found = await client.schemaText(id);
      if (found.status === 'not-found') return { kind: 'missing' };
      if (found.schemaType !== 'JSON') return { kind: 'unusable', reason: `a ${found.schemaType} schema, not JSON Schema` };
      return { kind: 'ready', writer: undefined };
    },
  });

  return {
    name: `registry-json-schema:${schemaName}`,

    prepare: (ctx: SerdeContext, env: SerdeEnvironment) => framing.prepare(ctx, env),

    serialize(value: T, ctx: SerdeContext): Buffer {
      const id = framing.idFor(ctx);
      const v = requireValue(value, ctx);
      // Validated as JSON will carry it: a Date becomes a string, an undefined property vanishes.
      const body = text.serialize(v, ctx) ?? Buffer.alloc(0);
      if (!validate.check(JSON.parse(body.toString('utf8')))) {
        throw new ValueInvalidError(ctx, `does not match ${schemaName}`, violations(validate.check.errors));
      }
      const out = Buffer.allocUnsafe(WIRE_HEADER + body.length);
      framing.writeHeader(out, id);
      body.copy(out, WIRE_HEADER);
      return out;
    },

    resolve: (data: Buffer | null) => framing.resolve(data),

    deserialize(data: Buffer | null, ctx: SerdeContext): T {
      const bytes = requireBytes(data, ctx);
      framing.writerOf(bytes, ctx);
      const value = text.deserialize(bytes.subarray(WIRE_HEADER), ctx);
      if (!validate.read(value)) {
        const paths = violations(validate.read.errors);
        throw new JsonSchemaViolationError(ctx, `does not match ${schemaName}: ${paths.join('; ')}`, paths);
      }
      return value;
    },
  };
}
