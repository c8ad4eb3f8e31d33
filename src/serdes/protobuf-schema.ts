import protobuf from 'protobufjs';
import descriptor from 'protobufjs/ext/descriptor/index.js';
import { ProtobufSchemaError } from './errors.ts';
import { readSchemaFile } from './schema-file.ts';

/** A `.proto` file's text, or the path of a `.proto` file (or a file URL). */
export type ProtobufSchemaSource = string | URL;

/** One parsed `.proto` file: its package and its message types in declaration order. */
export interface ProtobufFile {
  /** The top-level messages, each with its nested messages: what the wire format's message indexes count. */
  readonly messages: readonly protobuf.Type[];
}

export function loadProtobufText(source: ProtobufSchemaSource): string {
  if (source instanceof URL || (source.endsWith('.proto') && !source.includes('\n'))) {
    return readSchemaFile(source, 'Protobuf', (message, cause) => new ProtobufSchemaError(message, { cause }));
  }
  return source;
}

/**
 * Parses one `.proto` file on its own. Field names stay as the file writes them (keepCase): the
 * TypeScript type a topology declares then matches the contract's own names.
 */
export function parseProtobufFile(text: string, origin: string): ProtobufFile {
  let parsed: ParsedFile;
  try {
    parsed = isSerializedDescriptor(text) ? fromSerializedDescriptor(text) : protobuf.parse(text, new protobuf.Root(), { keepCase: true });
    parsed.root.resolveAll();
  } catch (cause) {
    throw new ProtobufSchemaError(`${origin} is not a usable .proto file: ${(cause as Error).message}`, { cause });
  }
  if (parsed.imports !== undefined && parsed.imports.length > 0) {
    throw new ProtobufSchemaError(`${origin} imports ${parsed.imports.join(', ')}: schemas with imports (registry references) are not supported`);
  }
  const top = parsed.package ? parsed.root.lookup(parsed.package) : parsed.root;
  const messages = top instanceof protobuf.Namespace ? messageTypes(top) : [];
  if (messages.length === 0) throw new ProtobufSchemaError(`${origin} declares no message`);
  return { messages };
}

/**
 * @confluentinc/schemaregistry registers a Protobuf schema as a base64 FileDescriptorProto, and a
 * registry may hand it back so. Base64 has none of the characters every .proto file has.
 */
const isSerializedDescriptor = (text: string): boolean => !/[;{"]/.test(text);

interface FileDescriptor {
  readonly package?: string;
  readonly dependency?: string[];
}
type RootFromDescriptor = (set: protobuf.Message) => protobuf.Root;

interface ParsedFile {
  readonly root: protobuf.Root;
  readonly package?: string | undefined;
  readonly imports?: string[] | undefined;
}

function fromSerializedDescriptor(text: string): ParsedFile {
  const file = descriptor.FileDescriptorProto.decode(Buffer.from(text.trim(), 'base64'));
  // The descriptor extension adds fromDescriptor to Root when it loads; its typings leave it out.
  const fromDescriptor = (protobuf.Root as unknown as { fromDescriptor: RootFromDescriptor }).fromDescriptor;
  const root = fromDescriptor(descriptor.FileDescriptorSet.create({ file: [file] }));
  const { package: packageName, dependency } = file as unknown as FileDescriptor;
  return { root, package: packageName, imports: dependency };
}

const messageTypes = (namespace: protobuf.NamespaceBase): protobuf.Type[] =>
  namespace.nestedArray.filter((n): n is protobuf.Type => n instanceof protobuf.Type);

/** The message a serde writes: the named one, or as Confluent's serializers do, the file's first. */
export function chooseMessage(file: ProtobufFile, messageName: string | undefined, origin: string): protobuf.Type {
  if (messageName === undefined) return file.messages[0]!;
  const wanted = messageName.replace(/^\./, '');
  const found = allMessages(file).find((t) => fullName(t) === wanted || fullName(t).endsWith(`.${wanted}`) || t.name === wanted);
  if (found === undefined) throw new ProtobufSchemaError(`${origin} has no message ${messageName}`);
  return found;
}

function allMessages(file: ProtobufFile): protobuf.Type[] {
  const out: protobuf.Type[] = [];
  const visit = (t: protobuf.Type) => {
    out.push(t);
    messageTypes(t).forEach(visit);
  };
  file.messages.forEach(visit);
  return out;
}

/** `pkg.Outer.Inner`, without protobufjs's leading dot. */
export const fullName = (type: protobuf.Type): string => type.fullName.replace(/^\./, '');

/** The path of indexes from the file's top-level messages down to this one. */
export function messageIndexes(file: ProtobufFile, type: protobuf.Type): number[] {
  const path: number[] = [];
  let current: protobuf.Type = type;
  for (;;) {
    const parent = current.parent;
    if (parent instanceof protobuf.Type) {
      path.unshift(messageTypes(parent).indexOf(current));
      current = parent;
    } else {
      path.unshift(file.messages.indexOf(current));
      return path;
    }
  }
}

/** The message at an index path, or undefined when the path leads nowhere in this file. */
export function messageAt(file: ProtobufFile, indexes: readonly number[]): protobuf.Type | undefined {
  let candidates: readonly protobuf.Type[] = file.messages;
  let found: protobuf.Type | undefined;
  for (const index of indexes) {
    found = candidates[index];
    if (found === undefined) return undefined;
    candidates = messageTypes(found);
  }
  return found;
}

/**
 * The message-index array of the Confluent Protobuf wire format: zigzag varints, the count first;
 * the common [0] is the single byte 0.
 */
export function encodeMessageIndexes(indexes: readonly number[]): Buffer {
  if (indexes.length === 1 && indexes[0] === 0) return Buffer.from([0]);
  const bytes: number[] = [];
  for (const n of [indexes.length, ...indexes]) {
    let zigzag = n * 2;
    while (zigzag >= 0x80) {
      bytes.push((zigzag & 0x7f) | 0x80);
      zigzag = Math.floor(zigzag / 128);
    }
    bytes.push(zigzag);
  }
  return Buffer.from(bytes);
}

/** Reads the message-index array at `offset`: the indexes and where the body starts, or a reason it is malformed. */
export function decodeMessageIndexes(data: Buffer, offset: number): { indexes: number[]; bodyStart: number } | string {
  let position = offset;
  const next = (): number | undefined => {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 5; i++) {
      const byte = data[position++];
      if (byte === undefined) return undefined;
      value += (byte & 0x7f) * scale;
      if ((byte & 0x80) === 0) return value % 2 === 0 ? value / 2 : -(value + 1) / 2;
      scale *= 128;
    }
    return undefined;
  };
  const count = next();
  if (count === undefined || count < 0) return 'the message-index array is truncated or malformed';
  if (count === 0) return { indexes: [0], bodyStart: position };
  if (count > 100) return `the message-index array claims ${count} entries`;
  const indexes: number[] = [];
  for (let i = 0; i < count; i++) {
    const index = next();
    if (index === undefined || index < 0) return 'the message-index array is truncated or malformed';
    indexes.push(index);
  }
  return { indexes, bodyStart: position };
}
