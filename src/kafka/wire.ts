import { connect, type Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';
import { OnceflowError } from '../errors.ts';
import type { ClientOptions } from './admin.ts';

// The Kafka client's admin has no DescribeConfigs or IncrementalAlterConfigs, so topic-configs.ts and
// alter-configs.ts speak to a broker themselves: one request on a plain connection, non-flexible
// versions only (request header v1, int16-length strings), which Kafka 4 still serves for both.

/** A broker could not be reached, did not answer in time, or answered with bytes that do not parse. */
export class BrokerRequestError extends OnceflowError {
  readonly code = 'BROKER_REQUEST_FAILED';
}

function requestFailed(message: string, cause?: unknown): BrokerRequestError {
  return new BrokerRequestError(message, cause === undefined ? undefined : { cause });
}

/** Only a plaintext listener is spoken to: TLS and SASL are the Kafka client's, which cannot send these requests. */
export function speaksPlaintext(kafka: ClientOptions): boolean {
  return String(kafka['security.protocol'] ?? 'plaintext').toLowerCase() === 'plaintext';
}

export interface BrokerRequest<T> {
  readonly apiKey: number;
  readonly version: number;
  /** Writes the request body after the header. */
  readonly body: (w: Writer) => void;
  /** Reads the response body after the correlation id. */
  readonly parse: (r: Reader) => T;
}

export interface SendOptions {
  readonly clientId?: string;
  readonly timeoutMs?: number;
  /**
   * Over TLS, without checking the broker's certificate: only for asking a listener which protocol it
   * speaks (listener-probe.ts), a request that carries nothing secret and whose answer is not trusted.
   */
  readonly unverifiedTls?: boolean;
}

/** Sends `request` to the first broker of `bootstrap` that answers it. */
export async function sendToAnyBroker<T>(bootstrap: string, request: BrokerRequest<T>, options: SendOptions = {}): Promise<T> {
  let last: unknown;
  for (const address of bootstrap.split(',').map((a) => a.trim().replace(/^[a-z_]+:\/\//i, '')).filter((a) => a.length > 0)) {
    try {
      return await sendTo(address, request, options.clientId ?? 'onceflow', options.timeoutMs ?? 10_000, options.unverifiedTls === true);
    } catch (e) {
      last = e;
    }
  }
  throw requestFailed(`no broker of ${bootstrap} answered (API key ${request.apiKey}): ${last instanceof Error ? last.message : String(last)}`, last);
}

async function sendTo<T>(address: string, request: BrokerRequest<T>, clientId: string, timeoutMs: number, unverifiedTls: boolean): Promise<T> {
  const colon = address.lastIndexOf(':');
  const host = address.slice(0, colon).replace(/^\[|\]$/g, '');
  const port = Number(address.slice(colon + 1));
  const socket = unverifiedTls ? connectTls({ host, port, rejectUnauthorized: false }) : connect({ host, port });
  try {
    return request.parse(new Reader(await exchange(socket, frame(request, clientId), timeoutMs, unverifiedTls ? 'secureConnect' : 'connect')).skipCorrelationId());
  } finally {
    socket.destroy();
  }
}

/** The request framed for the wire: size, header v1 (api key, version, correlation id, client id), body. */
export function frame(request: BrokerRequest<unknown>, clientId: string): Buffer {
  const w = new Writer();
  w.int16(request.apiKey).int16(request.version).int32(1).string(clientId);
  request.body(w);
  const body = w.bytes();
  const framed = Buffer.alloc(4 + body.length);
  framed.writeInt32BE(body.length, 0);
  body.copy(framed, 4);
  return framed;
}

function exchange(socket: Socket, framed: Buffer, timeoutMs: number, readyEvent: 'connect' | 'secureConnect'): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let received = Buffer.alloc(0);
    const timer = setTimeout(() => reject(requestFailed(`no answer within ${timeoutMs} ms`)), timeoutMs);
    const done = (f: () => void): void => {
      clearTimeout(timer);
      socket.removeAllListeners('data');
      f();
    };
    socket.once('error', (e) => done(() => reject(e)));
    socket.once('close', () => done(() => reject(requestFailed('the broker closed the connection'))));
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (received.length >= 4 && received.length >= 4 + received.readInt32BE(0)) done(() => resolve(received.subarray(4, 4 + received.readInt32BE(0))));
    });
    socket.once(readyEvent, () => socket.write(framed));
  });
}

export class Writer {
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
  /** An array of int32 length followed by each item. */
  array<T>(items: readonly T[], write: (item: T) => void): this {
    this.int32(items.length);
    for (const item of items) write(item);
    return this;
  }
  bytes(): Buffer {
    return Buffer.concat(this.#parts);
  }
  #push(b: Buffer): this {
    this.#parts.push(b);
    return this;
  }
}

export class Reader {
  #at = 0;
  constructor(private readonly buffer: Buffer) {}
  skipCorrelationId(): this {
    this.int32();
    return this;
  }
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
  /** An int32-counted array. */
  array<T>(read: () => T): T[] {
    const out: T[] = [];
    for (let n = this.int32(), i = 0; i < n; i++) out.push(read());
    return out;
  }
  #advance(n: number): number {
    const from = this.#at;
    if (from + n > this.buffer.length) throw requestFailed('a truncated response');
    this.#at += n;
    return from;
  }
}
