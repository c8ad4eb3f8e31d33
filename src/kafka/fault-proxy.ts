import { createServer, Socket, type Server } from 'node:net';
import { OnceflowError } from '../errors.ts';

/**
 * A loopback TCP proxy in front of one broker that can misbehave on command: stall connections (nothing
 * forwarded either way, sockets kept open, as a network partition that drops packets looks to both ends),
 * delay what the broker sends back, or cut every connection. Brokers advertise the proxy's port, so every
 * client connection, including the ones librdkafka opens after the bootstrap, goes through it.
 *
 * Connections are told apart by the client id of their first Kafka request (onceflow workers use their
 * transactional id): a fault can hit one worker's connections and spare the others.
 */
export class FaultProxyError extends OnceflowError {
  constructor(
    readonly code: 'PROXY_LISTEN_FAILED' | 'PROXY_CLOSED',
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** What a fault can select a connection by. */
export interface ProxiedConnection {
  readonly id: number;
  /** The client id of the connection's first request; undefined until it arrived (or when it was null). */
  readonly clientId: string | undefined;
  readonly clientPort: number;
}

export type ConnectionFilter = (connection: ProxiedConnection) => boolean;

export interface FaultProxyOptions {
  readonly targetPort: number;
  readonly targetHost?: string;
  /** Default: any free port. */
  readonly listenPort?: number;
  /** When set, a connection's bytes are held until its first request's header (with the client id) is in: needed for per-client faults. */
  readonly identifyClients?: boolean;
}

interface StallRule {
  readonly until: number;
  readonly match: ConnectionFilter;
}

/** One direction of one connection: chunks in order, each held until its due time and while the connection is stalled. */
class Pipe {
  private readonly queue: { chunk: Buffer; due: number }[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly from: Socket,
    private readonly to: Socket,
    private readonly blocked: () => boolean,
  ) {}

  push(chunk: Buffer, delayMs: number): void {
    this.queue.push({ chunk, due: Date.now() + delayMs });
    this.drain();
  }

  drain(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (this.blocked()) {
      // Stop reading too: the sender's writes back up in TCP as they would behind a dead link.
      this.from.pause();
      return;
    }
    this.from.resume();
    const now = Date.now();
    while (this.queue.length > 0 && this.queue[0]!.due <= now) {
      if (this.to.destroyed) return;
      this.to.write(this.queue.shift()!.chunk);
    }
    const head = this.queue[0];
    if (head) this.timer = setTimeout(() => this.drain(), head.due - now);
  }

  close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.queue.length = 0;
  }
}

/** Kafka request header: int32 size, int16 api key, int16 version, int32 correlation id, nullable int16-length client id. */
const CLIENT_ID_OFFSET = 12;

/** The client id of a connection's first request, `null` when it is not in yet, undefined when the request has none. */
function firstClientId(head: Buffer): string | undefined | null {
  if (head.length < CLIENT_ID_OFFSET + 2) return null;
  const length = head.readInt16BE(CLIENT_ID_OFFSET);
  if (length < 0) return undefined;
  if (head.length < CLIENT_ID_OFFSET + 2 + length) return null;
  return head.subarray(CLIENT_ID_OFFSET + 2, CLIENT_ID_OFFSET + 2 + length).toString('utf8');
}

class Connection implements ProxiedConnection {
  clientId: string | undefined;
  identified: boolean;
  readonly upstream: Pipe;
  readonly downstream: Pipe;
  private head: Buffer[] = [];

  constructor(
    readonly id: number,
    readonly client: Socket,
    readonly server: Socket,
    private readonly proxy: FaultProxy,
    identify: boolean,
  ) {
    this.identified = !identify;
    // Bytes before the client id is known wait in `head`, not in the pipe: pausing the client then would hold back the rest of the header for good.
    this.upstream = new Pipe(client, server, () => this.identified && proxy.isStalled(this));
    this.downstream = new Pipe(server, client, () => proxy.isStalled(this));
  }

  get clientPort(): number {
    return this.client.remotePort ?? 0;
  }

  fromClient(chunk: Buffer): void {
    if (this.identified) return this.upstream.push(chunk, 0);
    this.head.push(chunk);
    const id = firstClientId(Buffer.concat(this.head));
    if (id === null) return;
    this.clientId = id;
    this.identified = true;
    for (const held of this.head) this.upstream.push(held, 0);
    this.head = [];
    // A stall that began before this connection was identified applies to it from now on.
    this.upstream.drain();
    this.downstream.drain();
  }

  destroy(): void {
    this.upstream.close();
    this.downstream.close();
    this.client.destroy();
    this.server.destroy();
  }
}

export class FaultProxy {
  private readonly connections = new Map<number, Connection>();
  private stalls: StallRule[] = [];
  private responseDelayMs = 0;
  private nextId = 1;
  private stallTimer: NodeJS.Timeout | undefined;

  private constructor(
    private readonly server: Server,
    readonly port: number,
    readonly target: { readonly host: string; readonly port: number },
    private readonly identify: boolean,
  ) {}

  static async start(opts: FaultProxyOptions): Promise<FaultProxy> {
    const server = createServer();
    const target = { host: opts.targetHost ?? '127.0.0.1', port: opts.targetPort };
    const port = await new Promise<number>((resolve, reject) => {
      server.once('error', (e) => reject(new FaultProxyError('PROXY_LISTEN_FAILED', `the fault proxy for ${target.host}:${target.port} could not listen on ${opts.listenPort ?? 'a free port'}: ${e.message}`, { cause: e })));
      server.listen(opts.listenPort ?? 0, '127.0.0.1', () => {
        const address = server.address();
        resolve(typeof address === 'object' && address ? address.port : 0);
      });
    });
    const proxy = new FaultProxy(server, port, target, opts.identifyClients ?? true);
    server.on('connection', (client) => proxy.accept(client));
    return proxy;
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** The open connections, for choosing what to hit. */
  list(): ProxiedConnection[] {
    return [...this.connections.values()];
  }

  /** When the last stall ordered so far ends (epoch ms; 0 or past: none). */
  get stalledUntil(): number {
    return Math.max(0, ...this.stalls.map((s) => s.until));
  }

  isStalled(connection: ProxiedConnection): boolean {
    const now = Date.now();
    return this.stalls.some((s) => s.until > now && s.match(connection));
  }

  /**
   * Forwards nothing, either way, on the matching connections (also ones opened during the stall) for `ms`;
   * the sockets stay open, so the client notices only through its own timeouts. Returns how many were open.
   */
  stall(ms: number, match: ConnectionFilter = () => true): number {
    const until = Date.now() + ms;
    this.stalls.push({ until, match });
    const hit = this.list().filter(match).length;
    this.redrive();
    return hit;
  }

  /** Every response (broker to client) arrives `ms` later from now on; 0 ends it. */
  delayResponses(ms: number): void {
    this.responseDelayMs = Math.max(0, ms);
  }

  /** Closes the matching connections at once (clients see a reset and reconnect through the proxy). Returns how many. */
  cut(match: ConnectionFilter = () => true): number {
    const hit = [...this.connections.values()].filter(match);
    for (const c of hit) {
      c.destroy();
      this.connections.delete(c.id);
    }
    return hit.length;
  }

  async close(): Promise<void> {
    if (this.stallTimer) clearTimeout(this.stallTimer);
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket): void {
    const server = new Socket();
    const connection = new Connection(this.nextId++, client, server, this, this.identify);
    this.connections.set(connection.id, connection);
    const drop = () => {
      if (!this.connections.delete(connection.id)) return;
      connection.destroy();
    };
    client.on('data', (chunk: Buffer) => connection.fromClient(chunk));
    server.on('data', (chunk: Buffer) => connection.downstream.push(chunk, this.responseDelayMs));
    for (const socket of [client, server]) {
      socket.on('error', drop);
      socket.on('close', drop);
    }
    // Until the broker side is up, the client's bytes wait in the pipe's queue (its writes go to a connecting socket, which buffers them).
    server.connect(this.target.port, this.target.host);
  }

  /** Re-checks every pipe now and when the next stall ends. */
  private redrive(): void {
    const now = Date.now();
    this.stalls = this.stalls.filter((s) => s.until > now);
    for (const c of this.connections.values()) {
      c.upstream.drain();
      c.downstream.drain();
    }
    if (this.stallTimer) clearTimeout(this.stallTimer);
    const next = Math.min(...this.stalls.map((s) => s.until));
    if (Number.isFinite(next)) this.stallTimer = setTimeout(() => this.redrive(), Math.max(0, next - now) + 1);
  }
}
