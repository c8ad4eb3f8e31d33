import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { WorkerEvent } from '../runtime/base/worker-events.ts';
import { ObservabilityServerError } from './errors.ts';
import { attachMetrics, type AttachedMetrics, type MetricsOptions } from './metrics.ts';
import { scrub, secretValues } from './redact.ts';
import type { ObservedWorker } from './worker-view.ts';
import { queryJson, QueryRoutes } from './query-routes.ts';
import { bearerMatches } from './query-auth.ts';
import { QUERY_AUTH_SCHEME } from '../runtime/queries/query-auth-header.ts';

export interface DlqThreshold {
  /** Not ready once this many records were dead-lettered within the interval. */
  readonly count: number;
  readonly intervalMs: number;
}

export interface ReadinessOptions {
  /** Default: 100 records per minute. A poison burst makes the replica unready, so a rollout of a bad version stops. */
  readonly dlqThreshold?: DlqThreshold;
  /** A replica with nothing assigned (more replicas than partitions) is idle, not broken; default false = it is not ready. */
  readonly readyWithoutPartitions?: boolean;
  readonly now?: () => number;
}

export type HealthState =
  | { readonly ok: true; readonly partitions: number }
  | { readonly ok: false; readonly reason: string; readonly detail?: Readonly<Record<string, unknown>> };

/**
 * Liveness and readiness from the worker's events. The worker emits `assigned` only after the
 * partitions' state was restored (`restored` comes first when there is any), so an owned partition
 * is a restored one.
 */
export class Readiness {
  private readonly owned = new Set<string>();
  private readonly dlqAt: number[] = [];
  private started = false;
  private stopped = false;
  private fatal: string | undefined;
  private readonly threshold: DlqThreshold;
  private readonly now: () => number;
  private readonly onEvent = (e: WorkerEvent): void => this.handle(e);

  constructor(
    private readonly worker: ObservedWorker,
    private readonly options: ReadinessOptions = {},
  ) {
    this.threshold = options.dlqThreshold ?? { count: 100, intervalMs: 60_000 };
    this.now = options.now ?? Date.now;
    worker.on('event', this.onEvent);
  }

  detach(): void {
    this.worker.off('event', this.onEvent);
  }

  /** For a failure the worker does not report as an event (the CLI's start() rejecting). */
  markFatal(reason: string): void {
    this.fatal ??= reason;
  }

  private handle(e: WorkerEvent): void {
    switch (e.type) {
      case 'started':
        this.started = true;
        break;
      case 'assigned':
        for (const p of e.partitions) this.owned.add(p);
        break;
      case 'revoked':
        for (const p of e.partitions) this.owned.delete(p);
        break;
      case 'dead-lettered':
        this.dlqAt.push(this.now());
        this.prune();
        break;
      case 'stopped':
        this.stopped = true;
        this.owned.clear();
        // The loop's own failure surfaces only as done() rejecting, right after `stopped`.
        this.worker.done().catch((err: unknown) => this.markFatal(`worker failed: ${describe(err)}`));
        break;
      default:
        break;
    }
  }

  private prune(): void {
    const from = this.now() - this.threshold.intervalMs;
    while (this.dlqAt.length > 0 && (this.dlqAt[0] ?? 0) <= from) this.dlqAt.shift();
  }

  liveness(): HealthState {
    if (this.fatal !== undefined) return { ok: false, reason: 'fatal', detail: { error: this.fatal } };
    // The loop has died; its error reaches done() only once the clients are closed.
    if (this.worker.state === 'FAILED') return { ok: false, reason: 'fatal', detail: { state: 'FAILED' } };
    return { ok: true, partitions: this.owned.size };
  }

  readiness(): HealthState {
    const live = this.liveness();
    if (!live.ok) return live;
    if (this.stopped) return { ok: false, reason: 'stopped' };
    if (this.worker.state === 'PENDING_SHUTDOWN') return { ok: false, reason: 'stopping' };
    if (!this.started) return { ok: false, reason: 'starting' };
    if (this.owned.size === 0 && !this.options.readyWithoutPartitions) {
      return { ok: false, reason: 'no partitions assigned (rebalancing, restoring state, or more replicas than partitions)' };
    }
    this.prune();
    if (this.dlqAt.length >= this.threshold.count) {
      return { ok: false, reason: 'dead-letter rate', detail: { deadLettered: this.dlqAt.length, threshold: this.threshold.count, intervalMs: this.threshold.intervalMs } };
    }
    return { ok: true, partitions: this.owned.size };
  }
}

function describe(err: unknown): string {
  if (err instanceof Error) return 'code' in err && typeof err.code === 'string' ? `[${err.code}] ${err.message}` : err.message;
  return String(err);
}

export interface ObservabilityOptions extends ReadinessOptions, Omit<MetricsOptions, 'registry'> {
  /** 0 picks a free port (tests); the bound port is returned. */
  readonly port: number;
  /** Default 0.0.0.0: probes and Prometheus come from outside the container. */
  readonly host?: string;
}

export interface ObservabilityServer {
  readonly port: number;
  readonly metrics: AttachedMetrics;
  readonly readiness: Readiness;
  close(): Promise<void>;
}

/** `/metrics`, `/healthz` (alive), `/readyz` (owns restored partitions, not fatal, DLQ rate below threshold), and the interactive queries of query-routes.ts. */
export async function startObservability(worker: ObservedWorker, options: ObservabilityOptions): Promise<ObservabilityServer> {
  const metrics = attachMetrics(worker, options);
  const readiness = new Readiness(worker, options);
  // A probe reason may quote a worker error, and a worker error may quote client config.
  const secrets = secretValues(worker.config);
  const json = (res: ServerResponse, status: number, body: unknown): void => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(scrub(JSON.stringify(body), secrets));
  };
  const token = worker.config.queryToken;
  const queries = worker.queries ? new QueryRoutes(worker.queries, { token }) : undefined;
  const probe = (res: ServerResponse, state: HealthState): void =>
    json(res, state.ok ? 200 : 503, { status: state.ok ? 'ok' : 'unavailable', ...state, ...(worker.state === undefined ? {} : { workerState: worker.state }) });

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      json(res, 405, { error: 'method not allowed' });
      return;
    }
    switch (path) {
      case '/metrics':
        metrics.metrics().then(
          (text) => {
            res.writeHead(200, { 'content-type': metrics.contentType });
            res.end(text);
          },
          (err: unknown) => json(res, 500, { error: `collecting metrics failed: ${describe(err)}` }),
        );
        return;
      case '/healthz':
        probe(res, readiness.liveness());
        return;
      case '/readyz':
        probe(res, readiness.readiness());
        return;
      default:
        if (queries && path !== undefined && QueryRoutes.handles(path)) {
          // Only the store routes: probes and Prometheus carry no credentials, and show no stored value.
          if (token !== undefined && !bearerMatches(req.headers.authorization, token)) {
            res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': `${QUERY_AUTH_SCHEME} realm="onceflow stores"` });
            res.end(JSON.stringify({ error: `store queries need the header Authorization: ${QUERY_AUTH_SCHEME} <queryToken>` }));
            return;
          }
          void queries.handle(new URL(req.url ?? '/', 'http://localhost'), (status, body, headers) => {
            res.writeHead(status, { 'content-type': 'application/json', ...headers });
            res.end(scrub(queryJson(body), secrets));
          });
          return;
        }
        json(res, 404, { error: 'not found', paths: ['/metrics', '/healthz', '/readyz', ...(queries ? ['/stores', '/metadata/<store>/<key>'] : [])] });
    }
  });
  // Probes are short requests; an idle keep-alive socket must not hold close() open.
  server.keepAliveTimeout = 1_000;

  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port, options.host ?? '0.0.0.0', () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (e) {
    metrics.detach();
    readiness.detach();
    throw new ObservabilityServerError(`cannot serve metrics and health on port ${options.port}: ${describe(e)}`, options.port, { cause: e });
  }

  return {
    port: (server.address() as AddressInfo).port,
    metrics,
    readiness,
    async close() {
      readiness.detach();
      metrics.detach();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
