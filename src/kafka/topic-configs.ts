import { connect, type Socket } from 'node:net';
import { OnceflowError } from '../errors.ts';
import type { ClientOptions } from './admin.ts';

// The Kafka client's admin (KafkaJS-compatible layer and node-rdkafka layer alike) has no
// describeConfigs, and a topic's max.message.bytes is what decides whether the broker takes a
// record batch. So this asks a broker itself: one DescribeConfigs request (API key 32, version 1,
// the oldest Kafka 4 still serves) on a plain connection.

/** A broker did not answer DescribeConfigs, or answered with an error for a topic. */
export class DescribeConfigsError extends OnceflowError {
  readonly code = 'DESCRIBE_CONFIGS_FAILED';
}

const DESCRIBE_CONFIGS = 32;
const VERSION = 1;
const RESOURCE_TOPIC = 2;

/** Only a plaintext listener is spoken to: TLS and SASL are the Kafka client's, which cannot send this request. */
export function canDescribeConfigs(kafka: ClientOptions): boolean {
  const protocol = String(kafka['security.protocol'] ?? 'plaintext').toLowerCase();
  return protocol === 'plaintext';
}

/** `config` of each topic as the broker applies it (the topic's own value, or the broker's default). */
export async function describeTopicConfig(bootstrap: string, topics: readonly string[], config: string, options: { readonly clientId?: string; readonly timeoutMs?: number } = {}): Promise<Map<string, string>> {
  if (topics.length === 0) return new Map();
  let last: unknown;
  for (const address of bootstrap.split(',').map((a) => a.trim().replace(/^[a-z_]+:\/\//i, '')).filter((a) => a.length > 0)) {
    try {
      return await describeAt(address, topics, config, options.clientId ?? 'onceflow', options.timeoutMs ?? 10_000);
    } catch (e) {
      last = e;
    }
  }
  throw new DescribeConfigsError(`no broker of ${bootstrap} answered DescribeConfigs for ${config}: ${last instanceof Error ? last.message : String(last)}`, { cause: last });
}

async function describeAt(address: string, topics: readonly string[], config: string, clientId: string, timeoutMs: number): Promise<Map<string, string>> {
  const colon = address.lastIndexOf(':');
  const host = address.slice(0, colon).replace(/^\[|\]$/g, '');
  const port = Number(address.slice(colon + 1));
  const socket = connect({ host, port });
  try {
    const response = await exchange(socket, request(topics, config, clientId), timeoutMs);
    return parseResponse(response, config);
  } finally {
    socket.destroy();
  }
}

function request(topics: readonly string[], config: string, clientId: string): Buffer {
  const w = new Writer();
  w.int16(DESCRIBE_CONFIGS).int16(VERSION).int32(1).string(clientId);
  w.int32(topics.length);
  for (const topic of topics) w.int8(RESOURCE_TOPIC).string(topic).int32(1).string(config);
  w.int8(0); // include_synonyms
  const body = w.bytes();
  const framed = Buffer.alloc(4 + body.length);
  framed.writeInt32BE(body.length, 0);
  body.copy(framed, 4);
  return framed;
}

function exchange(socket: Socket, frame: Buffer, timeoutMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let received = Buffer.alloc(0);
    const timer = setTimeout(() => reject(new DescribeConfigsError(`no answer within ${timeoutMs} ms`)), timeoutMs);
    const done = (f: () => void): void => {
      clearTimeout(timer);
      socket.removeAllListeners('data');
      f();
    };
    socket.once('error', (e) => done(() => reject(e)));
    socket.once('close', () => done(() => reject(new DescribeConfigsError('the broker closed the connection'))));
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (received.length >= 4 && received.length >= 4 + received.readInt32BE(0)) done(() => resolve(received.subarray(4, 4 + received.readInt32BE(0))));
    });
    socket.once('connect', () => socket.write(frame));
  });
}

function parseResponse(body: Buffer, config: string): Map<string, string> {
  const r = new Reader(body);
  r.int32(); // correlation id
  r.int32(); // throttle time
  const out = new Map<string, string>();
  for (let results = r.int32(), i = 0; i < results; i++) {
    const errorCode = r.int16();
    const errorMessage = r.nullableString();
    r.int8(); // resource type
    const topic = r.nullableString() ?? '';
    if (errorCode !== 0) throw new DescribeConfigsError(`topic ${topic}: error ${errorCode}${errorMessage ? ` (${errorMessage})` : ''}`);
    for (let configs = r.int32(), j = 0; j < configs; j++) {
      const name = r.nullableString();
      const value = r.nullableString();
      r.int8(); // read only
      r.int8(); // config source
      r.int8(); // sensitive
      for (let synonyms = r.int32(), k = 0; k < synonyms; k++) {
        r.nullableString();
        r.nullableString();
        r.int8();
      }
      if (name === config && value !== null) out.set(topic, value);
    }
  }
  return out;
}

class Writer {
  readonly #parts: Buffer[] = [];
  int8(v: number): this {
    const b = Buffer.alloc(1);
    b.writeInt8(v);
    return this.#push(b);
  }
  int16(v: number): this {
    const b = Buffer.alloc(2);
    b.writeInt16BE(v);
    return this.#push(b);
  }
  int32(v: number): this {
    const b = Buffer.alloc(4);
    b.writeInt32BE(v);
    return this.#push(b);
  }
  string(v: string): this {
    const s = Buffer.from(v, 'utf8');
    return this.int16(s.length).#push(s);
  }
  bytes(): Buffer {
    return Buffer.concat(this.#parts);
  }
  #push(b: Buffer): this {
    this.#parts.push(b);
    return this;
  }
}

class Reader {
  #at = 0;
  constructor(private readonly buffer: Buffer) {}
  int8(): number {
    return this.buffer.readInt8(this.#advance(1));
  }
  int16(): number {
    return this.buffer.readInt16BE(this.#advance(2));
  }
  int32(): number {
    return this.buffer.readInt32BE(this.#advance(4));
  }
  nullableString(): string | null {
    const length = this.int16();
    if (length < 0) return null;
    const from = this.#advance(length);
    return this.buffer.toString('utf8', from, from + length);
  }
  #advance(n: number): number {
    const from = this.#at;
    if (from + n > this.buffer.length) throw new DescribeConfigsError('a truncated DescribeConfigs response');
    this.#at += n;
    return from;
  }
}
