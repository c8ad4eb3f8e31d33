import { isOnceflowError } from '../errors.ts';
import type { InteractiveQueries, KeyAnswer, KeyLocation, WindowsAnswer } from '../runtime/queries/interactive-queries.ts';
import type { MemberEndpoint } from '../runtime/queries/endpoints.ts';
import { parseKeyText, StoreQueryError } from '../state/queries.ts';
import { queryAuthHeaders } from '../runtime/queries/query-auth-header.ts';

export type Respond = (status: number, body: unknown, headers?: Readonly<Record<string, string>>) => void;

/** How long a routed query waits for the owner's answer. */
const ROUTE_TIMEOUT_MS = 5_000;

/**
 * The interactive-query routes of a worker's HTTP server:
 * - `GET /stores`: the stores,
 * - `GET /stores/<store>/<key>`: a key's value (a windowed store: its windows, `?from=&to=` in ms of
 *   window start), from this worker's committed state; `?route=1` asks the owner if that is another
 *   replica; `?stale=1` answers from a task still restoring,
 * - `GET /stores/<store>?prefix=<key>` or `?from=<key>&to=<key>`, `&limit=`: a bounded scan of this
 *   worker's part of a key-value store,
 * - `GET /metadata/<store>/<key>`: the partition and the member that owns a key; `?route=1` forwards
 *   the key's query to that member and answers with its answer.
 * Keys are path segments: a string key as it is, any other as JSON.
 */
export class QueryRoutes {
  constructor(
    private readonly queries: InteractiveQueries,
    /** The app's queryToken: the owner of a routed key asks for it as this replica does. */
    private readonly options: { readonly token?: string | undefined } = {},
  ) {}

  static handles(path: string): boolean {
    return path === '/stores' || path.startsWith('/stores/') || path.startsWith('/metadata/');
  }

  async handle(url: URL, respond: Respond): Promise<void> {
    try {
      await this.#route(url, respond);
    } catch (e) {
      if (e instanceof StoreQueryError) respond(400, { error: e.message, code: e.code });
      else if (isOnceflowError(e) && e.code === 'QUERY_STORE_UNKNOWN') respond(404, { error: e.message, code: e.code, stores: this.queries.storeNames() });
      else if (isOnceflowError(e)) respond(503, { error: e.message, code: e.code });
      else respond(500, { error: e instanceof Error ? e.message : String(e) });
    }
  }

  async #route(url: URL, respond: Respond): Promise<void> {
    const parts = url.pathname.split('/').slice(1).map((p) => decodeURIComponent(p));
    const flag = (name: string): boolean => ['1', 'true', 'yes'].includes(url.searchParams.get(name) ?? '');
    const stale = flag('stale');
    const [root, store, keyText, ...rest] = parts;
    if (root === 'stores' && store === undefined) {
      respond(200, { stores: this.queries.storeNames().map((name) => ({ name, windowed: this.queries.spec(name).window !== undefined, ...(this.queries.spec(name).versioned ? { versioned: true } : {}) })) });
      return;
    }
    if (store === undefined || store === '' || rest.length > 0) {
      respond(404, { error: 'not found', paths: ['/stores', '/stores/<store>', '/stores/<store>/<key>', '/metadata/<store>/<key>'] });
      return;
    }
    const spec = this.queries.spec(store);
    if (root === 'stores' && (keyText === undefined || keyText === '')) {
      const param = (name: string): unknown => {
        const text = url.searchParams.get(name);
        return text === null ? undefined : parseKeyText(text, spec);
      };
      const limitText = url.searchParams.get('limit');
      const answer = this.queries.scan(store, { prefix: param('prefix'), from: param('from'), to: param('to'), ...(limitText !== null ? { limit: Number(limitText) } : {}), stale });
      respond(200, { store, ...answer });
      return;
    }
    const key = parseKeyText(keyText!, spec);
    if (root === 'metadata' && !flag('route')) {
      const location = await this.queries.locate(store, key);
      respond(location.owner === undefined ? 503 : 200, { ...location, key, ...(location.owner === undefined ? { reason: 'no member owns the partition now (the group is rebalancing)' } : {}) });
      return;
    }
    const time = (name: string): number | undefined => (url.searchParams.has(name) ? Number(url.searchParams.get(name)) : undefined);
    const read = (): KeyAnswer<unknown> | WindowsAnswer<unknown> =>
      spec.window ? this.queries.fetch(store, key, time('from'), time('to'), { stale }) : this.queries.get(store, key, { stale, ...(url.searchParams.has('asOf') ? { asOf: time('asOf')! } : {}) });
    const answer = read();
    if (answer.status === 'elsewhere' && (root === 'metadata' || flag('route'))) {
      await this.#forward(await this.queries.locate(store, key), keyText!, url, respond);
      return;
    }
    answerKey(store, key, answer, respond);
  }

  /** Asks the owner's server for the key, without routing further: one hop, so two replicas that disagree about the owner cannot bounce a query forever. */
  async #forward(location: KeyLocation, keyText: string, url: URL, respond: Respond): Promise<void> {
    const owner = location.owner;
    if (owner === undefined) {
      respond(503, { status: 'rebalancing', store: location.store, partition: location.partition, error: 'no member owns the partition now (the group is rebalancing)' }, { 'retry-after': '1' });
      return;
    }
    if (owner.url === undefined) {
      respond(502, { status: 'no-endpoint', store: location.store, partition: location.partition, owner, error: `the owner ${owner.clientId} advertised no URL (start it with --advertised-url)` });
      return;
    }
    const target = new URL(`/stores/${encodeURIComponent(location.store)}/${encodeURIComponent(keyText)}`, owner.url);
    for (const name of ['stale', 'from', 'to', 'asOf']) {
      const v = url.searchParams.get(name);
      if (v !== null) target.searchParams.set(name, v);
    }
    let res: Response;
    try {
      res = await fetch(target, { headers: queryAuthHeaders(this.options.token), signal: AbortSignal.timeout(ROUTE_TIMEOUT_MS) });
    } catch (e) {
      respond(502, { status: 'owner-unreachable', owner, error: `the owner at ${owner.url} did not answer: ${e instanceof Error ? e.message : String(e)}` });
      return;
    }
    const body = (await res.json().catch(() => ({ error: 'the owner answered with something that is not JSON' }))) as Record<string, unknown>;
    respond(res.status, { ...body, routedTo: routedTo(owner) }, res.headers.has('retry-after') ? { 'retry-after': res.headers.get('retry-after')! } : {});
  }
}

function routedTo(owner: MemberEndpoint): { clientId: string; url: string | undefined } {
  return { clientId: owner.clientId, url: owner.url };
}

function answerKey(store: string, key: unknown, answer: KeyAnswer<unknown> | WindowsAnswer<unknown>, respond: Respond): void {
  switch (answer.status) {
    case 'found':
      respond(200, { store, key, ...answer });
      return;
    case 'missing':
      respond(404, { store, key, ...answer });
      return;
    case 'restoring':
      respond(503, { store, key, ...answer, progress: answer.progress.map((p) => ({ ...p, remaining: Math.max(0, p.to - p.position) })) }, { 'retry-after': '1' });
      return;
    case 'elsewhere':
      // 421 Misdirected Request: the right server exists, it is not this one (`?route=1` asks it).
      respond(421, { store, key, ...answer });
      return;
  }
}

/** JSON text of a query answer: values may hold bigints (Avro longs), which JSON.stringify refuses. */
export function queryJson(body: unknown): string {
  return JSON.stringify(body, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
}
