import protobuf from 'protobufjs';
import type { Serde, SerdeContext, SerdeEnvironment } from './serde.ts';
import { ProtobufInvalidError, ValueInvalidError, requireBytes, requireValue } from './errors.ts';
import { WIRE_HEADER, registryFraming, type RegistrySerdeOptions, type WriterLoad } from './registry-framing.ts';
import {
  chooseMessage,
  decodeMessageIndexes,
  encodeMessageIndexes,
  fullName,
  loadProtobufText,
  messageAt,
  messageIndexes,
  parseProtobufFile,
  type ProtobufFile,
  type ProtobufSchemaSource,
} from './protobuf-schema.ts';
import { protobufValueProblems } from './protobuf-values.ts';

export interface RegistryProtobufSerdeOptions extends RegistrySerdeOptions {
  /** The `.proto` file (its text, or a path ending in `.proto`); no imports. */
  readonly schema: ProtobufSchemaSource;
  /** The message this serde reads and writes (`Order` or `shop.Order`); default the file's first. */
  readonly messageName?: string;
  /** How 64-bit integers are given back: exact `bigint` (default) or decimal `string`. */
  readonly longs?: 'bigint' | 'string';
}

/**
 * Protobuf in the Confluent wire format: byte 0, the 4-byte schema id, the message-index array
 * naming the message within the schema's file, then the Protobuf body.
 *
 * Evolution is Protobuf's own: the body is always decoded with the reader's message, matched to
 * the writer's by field number, so fields the reader does not know are skipped and fields the
 * writer did not send get their defaults. The writer schema is fetched only to check that the
 * index names a message of the same full name: another message on the topic would decode into
 * nonsense without an error.
 */
export function registryProtobufSerde<T>(options: RegistryProtobufSerdeOptions): Serde<T> {
  const schemaText = loadProtobufText(options.schema);
  const origin = typeof options.schema === 'string' && options.schema.endsWith('.proto') ? options.schema : 'the Protobuf schema';
  const file = parseProtobufFile(schemaText, origin);
  const reader = chooseMessage(file, options.messageName, origin);
  const readerName = fullName(reader);
  const indexBytes = encodeMessageIndexes(messageIndexes(file, reader));
  const conversion: protobuf.IConversionOptions = {
    longs: options.longs === 'string' ? String : BigInt,
    enums: String,
    defaults: true,
  };

  const framing = registryFraming<ProtobufFile>(options, {
    label: 'Protobuf',
    schemaType: 'PROTOBUF',
    schemaText,
    schemaName: readerName,
    ownWriter: file,
    async loadWriter(client, id): Promise<WriterLoad<ProtobufFile>> {
      const found = await client.schemaText(id);
      if (found.status === 'not-found') return { kind: 'missing' };
      if (found.schemaType !== 'PROTOBUF') return { kind: 'unusable', reason: `a ${found.schemaType} schema, not Protobuf` };
      try {
        return { kind: 'ready', writer: parseProtobufFile(found.schema, `schema id ${id}`) };
      } catch (e) {
        return { kind: 'unusable', reason: (e as Error).message };
      }
    },
  });

  return {
    name: `registry-protobuf:${readerName}`,

    prepare: (ctx: SerdeContext, env: SerdeEnvironment) => framing.prepare(ctx, env),

    serialize(value: T, ctx: SerdeContext): Buffer {
      const id = framing.idFor(ctx);
      const v = requireValue(value, ctx);
      const problems = protobufValueProblems(reader, v);
      if (problems.length > 0) throw new ValueInvalidError(ctx, `not a ${readerName}`, problems);
      let body: Uint8Array;
      try {
        const message = reader.fromObject(v as Record<string, unknown>);
        const missing = reader.verify(message);
        if (missing !== null) throw new Error(missing);
        body = reader.encode(message).finish();
      } catch (cause) {
        throw new ValueInvalidError(ctx, `not a ${readerName} (${(cause as Error).message})`, [], { cause });
      }
      const out = Buffer.allocUnsafe(WIRE_HEADER + indexBytes.length + body.length);
      framing.writeHeader(out, id);
      indexBytes.copy(out, WIRE_HEADER);
      out.set(body, WIRE_HEADER + indexBytes.length);
      return out;
    },

    resolve: (data: Buffer | null) => framing.resolve(data),

    deserialize(data: Buffer | null, ctx: SerdeContext): T {
      const bytes = requireBytes(data, ctx);
      const writerFile = framing.writerOf(bytes, ctx);
      const read = decodeMessageIndexes(bytes, WIRE_HEADER);
      if (typeof read === 'string') throw new ProtobufInvalidError(ctx, 'deserialize', read);
      const writer = messageAt(writerFile, read.indexes);
      if (writer === undefined) {
        throw new ProtobufInvalidError(ctx, 'deserialize', `message index [${read.indexes.join(', ')}] names no message of the writer schema`);
      }
      if (fullName(writer) !== readerName) {
        throw new ProtobufInvalidError(ctx, 'deserialize', `the record is a ${fullName(writer)}, this serde reads ${readerName}`);
      }
      let message: protobuf.Message;
      try {
        // A plain Uint8Array, not a Buffer: protobufjs's Buffer reader clips a string that runs past
        // the end instead of failing, so a truncated record would decode as a shorter one.
        message = reader.decode(new protobuf.Reader(new Uint8Array(bytes.buffer, bytes.byteOffset + read.bodyStart, bytes.length - read.bodyStart)));
      } catch (cause) {
        throw new ProtobufInvalidError(ctx, 'deserialize', `not a ${readerName} body (${(cause as Error).message})`, { cause });
      }
      return reader.toObject(message, conversion) as T;
    },
  };
}
