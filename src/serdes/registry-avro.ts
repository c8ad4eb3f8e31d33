import type { Resolver, Type } from 'avsc';
import type { Serde, SerdeContext, SerdeEnvironment } from './serde.ts';
import { requireBytes, requireValue } from './errors.ts';
import { decodeAvroBody, encodeAvroInto, type AvroSerdeOptions } from './avro.ts';
import { loadAvroSchema, parseAvroSchema } from './avro-types.ts';
import { WIRE_HEADER, registryFraming, type RegistrySerdeOptions, type WriterLoad } from './registry-framing.ts';

export interface RegistryAvroSerdeOptions extends AvroSerdeOptions, RegistrySerdeOptions {}

/**
 * Avro in the Confluent wire format: byte 0, a 4-byte big-endian schema id, the Avro body.
 * A writer schema other than ours is read through a writer->reader resolver, built once per id.
 */
export function registryAvroSerde<T>(options: RegistryAvroSerdeOptions): Serde<T> {
  const longs = options.longs ?? 'number';
  const definition = loadAvroSchema(options.schema);
  const reader = parseAvroSchema(definition, { longs });
  const schemaName = reader.name ?? reader.typeName;

  function writerEntry(writer: Type): WriterLoad<Resolver | undefined> {
    // equals() compares canonical forms; with no difference there, reading with the
    // reader type directly is both correct and faster than going through a resolver.
    if (writer.equals(reader)) return { kind: 'ready', writer: undefined };
    try {
      return { kind: 'ready', writer: reader.createResolver(writer) };
    } catch (e) {
      return { kind: 'unusable', reason: `cannot read it as ${schemaName}: ${(e as Error).message}` };
    }
  }

  const framing = registryFraming<Resolver | undefined>(options, {
    label: 'Avro',
    schemaType: 'AVRO',
    // The registry compares schemas by their text; canonical JSON keeps the id stable across
    // key order or whitespace in the source.
    schemaText: JSON.stringify(reader.schema({ exportAttrs: true })),
    schemaName,
    ownWriter: undefined,
    clientOptions: { longs },
    async loadWriter(client, id) {
      const found = await client.writerSchema(id);
      if (found.status === 'not-found') return { kind: 'missing' };
      if (found.status === 'unusable') return { kind: 'unusable', reason: found.reason };
      return writerEntry(found.type);
    },
  });
  let scratch = Buffer.allocUnsafe(4096);

  return {
    name: `registry-avro:${schemaName}`,
    schemaHash: reader.fingerprint('sha256').toString('hex'),

    prepare: (ctx: SerdeContext, env: SerdeEnvironment) => framing.prepare(ctx, env),

    serialize(value: T, ctx: SerdeContext): Buffer {
      const id = framing.idFor(ctx);
      const v = requireValue(value, ctx);
      let end = encodeAvroInto(reader, v, scratch, WIRE_HEADER, ctx);
      if (end < 0) {
        // avsc returns minus the missing byte count when the buffer is too small.
        scratch = Buffer.allocUnsafe(Math.max(scratch.length * 2, scratch.length - end));
        end = encodeAvroInto(reader, v, scratch, WIRE_HEADER, ctx);
      }
      const out = Buffer.allocUnsafe(end);
      scratch.copy(out, WIRE_HEADER, WIRE_HEADER, end);
      framing.writeHeader(out, id);
      return out;
    },

    resolve: (data: Buffer | null) => framing.resolve(data),

    deserialize(data: Buffer | null, ctx: SerdeContext): T {
      const bytes = requireBytes(data, ctx);
      const resolver = framing.writerOf(bytes, ctx);
      return decodeAvroBody<T>(reader, bytes, WIRE_HEADER, ctx, resolver);
    },
  };
}
