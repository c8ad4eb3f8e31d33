import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConsoleServerError } from './errors.ts';
import type { LiveSnapshot } from './live-state.ts';
import type { TopologyGraph } from './topology-graph.ts';

/** What the server shows: the graph (absent without a topology file) and a feed of live snapshots. */
export interface ConsoleSource {
  readonly graph: TopologyGraph | undefined;
  latest(): LiveSnapshot | undefined;
  subscribe(listener: (s: LiveSnapshot) => void): () => void;
}

export interface ConsoleServerOptions {
  readonly port: number;
  /** Default 127.0.0.1: the page shows dead-lettered payloads' errors, not for the whole network unless asked. */
  readonly host?: string;
}

export interface ConsoleServer {
  readonly port: number;
  readonly url: string;
  close(): Promise<void>;
}

// Beside this module in src/ and in dist/ alike: the build copies the folder.
const ASSETS = fileURLToPath(new URL('./assets/', import.meta.url));
const DAGRE = join(dirname(createRequire(import.meta.url).resolve('@dagrejs/dagre/package.json')), 'dist', 'dagre.min.js');

const FILES: Readonly<Record<string, { readonly path: string; readonly type: string }>> = {
  '/': { path: join(ASSETS, 'index.html'), type: 'text/html; charset=utf-8' },
  '/assets/console.js': { path: join(ASSETS, 'console.js'), type: 'text/javascript; charset=utf-8' },
  '/assets/graph-layout.js': { path: join(ASSETS, 'graph-layout.js'), type: 'text/javascript; charset=utf-8' },
  '/assets/console.css': { path: join(ASSETS, 'console.css'), type: 'text/css; charset=utf-8' },
  '/assets/dagre.min.js': { path: DAGRE, type: 'text/javascript; charset=utf-8' },
};

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}

/** Server-sent events: one `data:` line with each snapshot, the current one first. */
function events(req: IncomingMessage, res: ServerResponse, source: ConsoleSource): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' });
  const send = (s: LiveSnapshot): void => void res.write(`data: ${JSON.stringify(s)}\n\n`);
  const latest = source.latest();
  if (latest) send(latest);
  const unsubscribe = source.subscribe(send);
  req.on('close', unsubscribe);
}

/** The console's page, its assets and its data: `/api/topology`, `/api/state` and `/api/events` (SSE). */
export async function startConsoleServer(source: ConsoleSource, options: ConsoleServerOptions): Promise<ConsoleServer> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (req.method !== 'GET' && req.method !== 'HEAD') return json(res, 405, { error: 'method not allowed' });
    const file = FILES[path === '/index.html' ? '/' : path];
    if (file) {
      // Small files, read whole: a missing asset is a 500 naming it, not an empty 200.
      readFile(file.path).then(
        (body) => {
          res.writeHead(200, { 'content-type': file.type });
          res.end(body);
        },
        (e: unknown) => json(res, 500, { error: `cannot read ${file.path}: ${e instanceof Error ? e.message : String(e)}` }),
      );
      return;
    }
    switch (path) {
      case '/api/topology':
        return source.graph ? json(res, 200, source.graph) : json(res, 404, { error: 'no topology: start the console with the topology file (onceflow console <topology.ts> ...) to see the graph' });
      case '/api/state':
        return json(res, 200, source.latest() ?? null);
      case '/api/events':
        return events(req, res, source);
      default:
        return json(res, 404, { error: 'not found', paths: ['/', '/api/topology', '/api/state', '/api/events'] });
    }
  });
  const host = options.host ?? '127.0.0.1';
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (e) {
    throw new ConsoleServerError(`cannot serve the console on ${host}:${options.port}: ${e instanceof Error ? e.message : String(e)}`, options.port, { cause: e });
  }
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}/`,
    async close() {
      // Event streams never end by themselves.
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
