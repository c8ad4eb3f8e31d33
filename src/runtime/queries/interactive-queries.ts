import { OnceflowError } from '../../errors.ts';
import type { CompiledStore } from '../../graph/types.ts';
import { partitionFor } from '../../core/partitioner.ts';
import { queryKeyBytes, scanAll, StoreReader, type KeyValueEntry, type ScanOptions, type WindowEntry } from '../../state/queries.ts';
import { describeMembers, readEndpoints, type ConnectionOptions, type MemberEndpoint } from './endpoints.ts';
import type { RestoreProgress, TaskManager } from '../task/task-manager.ts';
import { taskId } from '../task/task.ts';
import { queryAuthHeaders } from './query-auth-header.ts';

export class UnknownQueryStoreError extends OnceflowError {
  readonly code = 'QUERY_STORE_UNKNOWN';
  constructor(
    readonly store: string,
    readonly known: readonly string[],
  ) {
    super(`no store named ${store} in this topology (its stores: ${known.length > 0 ? known.join(', ') : 'none'})`);
  }
}

/** A query the worker cannot answer yet: it has not started, so it knows no partition counts. */
export class QueryNotReadyError extends OnceflowError {
  readonly code = 'QUERY_NOT_READY';
}

export interface ReadOptions {
  /** Answer from a task whose restore is still running, with the state restored so far. */
  readonly stale?: boolean;
}

/** Where a key lives: its partition and task, and the member that owns it now. */
export interface KeyLocation {
  readonly store: string;
  readonly partition: number;
  readonly task: string;
  /** Undefined while the group rebalances and no member holds the partition. */
  readonly owner: MemberEndpoint | undefined;
  /** This worker owns it. */
  readonly local: boolean;
}

/**
 * One key's answer:
 * - `found` / `missing`: read from the committed state of the task that owns it,
 * - `restoring`: its task is rebuilding its stores from the changelog (the progress says how far),
 *   so its state would be an old one; `stale: true` reads it anyway,
 * - `elsewhere`: another member owns it (`owner`, when the group says who).
 */
export type KeyAnswer<T> =
  | { readonly status: 'found'; readonly partition: number; readonly value: T; readonly stale?: true }
  | { readonly status: 'missing'; readonly partition: number; readonly stale?: true }
  | { readonly status: 'restoring'; readonly partition: number; readonly progress: readonly RestoreProgress[] }
  | { readonly status: 'elsewhere'; readonly partition: number; readonly owner: MemberEndpoint | undefined };

export type WindowsAnswer<T> =
  | { readonly status: 'found'; readonly partition: number; readonly windows: readonly WindowEntry[] & readonly { readonly value: T }[]; readonly stale?: true }
  | Exclude<KeyAnswer<T>, { readonly status: 'found' | 'missing' }>;

export interface ScanAnswer {
  readonly entries: readonly KeyValueEntry[];
  /** The limit cut the scan short. */
  readonly more: boolean;
  /** Partitions of the store this worker owns whose restore is running (left out unless `stale`). */
  readonly restoring: readonly number[];
  /** The partitions the scan read: a scan reads this worker's tasks only. */
  readonly partitions: readonly number[];
}

export interface InteractiveQueriesHost {
  readonly appId: string;
  readonly stores: ReadonlyMap<string, CompiledStore>;
  readonly tasks: TaskManager;
  readonly sourceTopicsOf: (subtopology: number) => readonly string[];
  readonly partitionCount: (topic: string) => number | undefined;
  readonly connection: ConnectionOptions;
  /** This worker's consumer client id, as the group lists it. */
  readonly clientId: () => string;
  readonly advertisedUrl: string | undefined;
  /** The app's queryToken: the owner's store routes ask for it (observability/query-auth.ts). */
  readonly queryToken?: string | undefined;
  readonly now?: () => number;
  /** A store of a task this worker keeps warm for another replica (runtime/standby/): stale reads may come from it. */
  readonly standbyReader?: (subtopology: number, partition: number, store: string) => StoreReader | undefined;
}

/** How long the group's assignment, as described by its coordinator, is reused for key lookups. */
const MEMBERS_TTL_MS = 1_000;

/**
 * Interactive queries: reading a running application's stores. A key is placed as the producer
 * places it (murmur2 of the key's bytes over the sub-topology's partition count), so the task that
 * owns it is known without asking anyone; the member that runs the task is known from the group.
 * Reads see committed state only (TransactionalStore.committed), never the open transaction's writes.
 */
export class InteractiveQueries {
  #members: { readonly at: number; readonly list: readonly Omit<MemberEndpoint, 'url' | 'instanceId'>[] } | undefined;
  #endpoints = new Map<string, { readonly url: string; readonly instanceId: string }>();

  constructor(private readonly host: InteractiveQueriesHost) {}

  storeNames(): string[] {
    return [...this.host.stores.keys()];
  }

  spec(store: string): CompiledStore {
    const spec = this.host.stores.get(store);
    if (!spec) throw new UnknownQueryStoreError(store, this.storeNames());
    return spec;
  }

  /** The partition (and task) a key of `store` lives in. */
  partitionOf(store: string, key: unknown): { partition: number; task: string } {
    const spec = this.spec(store);
    const topic = this.host.sourceTopicsOf(spec.subtopology)[0];
    const count = topic === undefined ? undefined : this.host.partitionCount(topic);
    if (count === undefined) throw new QueryNotReadyError(`store ${store}: the worker has not started, so its partition counts are unknown`);
    const bytes = queryKeyBytes(spec, key);
    const partition = count === 1 ? 0 : partitionFor(bytes, count);
    return { partition, task: taskId(spec.subtopology, partition) };
  }

  /** A key's value from this worker's committed state; with `asOf`, a versioned store's value at that time. */
  get<T = unknown>(store: string, key: unknown, opts: ReadOptions & { readonly asOf?: number } = {}): KeyAnswer<T> {
    return this.#local(store, key, opts, (reader) => {
      const value = opts.asOf === undefined ? reader.get(key) : reader.getAsOf(key, opts.asOf);
      return value === undefined ? { status: 'missing' } : { status: 'found', value: value as T };
    });
  }

  /** The windows of a key in a windowed store whose start lies in [fromMs, toMs]. */
  fetch<T = unknown>(store: string, key: unknown, fromMs?: number, toMs?: number, opts: ReadOptions = {}): WindowsAnswer<T> {
    return this.#local(store, key, opts, (reader) => ({ status: 'found', windows: reader.fetch(key, fromMs, toMs) as WindowEntry[] & { value: T }[] })) as WindowsAnswer<T>;
  }

  #local<A extends { status: string }>(store: string, key: unknown, opts: ReadOptions, read: (reader: StoreReader) => A): (A & { partition: number; stale?: true }) | KeyAnswer<never> {
    const spec = this.spec(store);
    const { partition } = this.partitionOf(store, key);
    const task = this.host.tasks.taskOf(spec.subtopology, partition);
    if (!task?.reader) {
      // A warm copy trails its owner's commits by the changelog read's delay: an answer from it is stale.
      const warm = opts.stale === true ? this.host.standbyReader?.(spec.subtopology, partition, store) : undefined;
      if (warm !== undefined) return { ...read(warm), partition, stale: true as const };
      return { status: 'elsewhere', partition, owner: this.#cachedOwner(spec, partition) };
    }
    const progress = this.host.tasks.restoreProgress(task);
    if (progress !== undefined && !opts.stale) return { status: 'restoring', partition, progress: progress.map((p) => ({ ...p })) };
    return { ...read(task.reader(store)), partition, ...(progress !== undefined ? { stale: true as const } : {}) };
  }

  /** Entries of this worker's part of a key-value store: a bounded scan by key prefix or range. */
  scan(store: string, opts: ScanOptions & ReadOptions = {}): ScanAnswer {
    const spec = this.spec(store);
    const partitions: number[] = [];
    const restoring: number[] = [];
    const readers: StoreReader[] = [];
    for (const { partition, task } of this.host.tasks.tasksOf(spec.subtopology).sort((a, b) => a.partition - b.partition)) {
      if (!task.reader) continue;
      if (this.host.tasks.restoreProgress(task) !== undefined) {
        restoring.push(partition);
        if (!opts.stale) continue;
      }
      partitions.push(partition);
      readers.push(task.reader(store));
    }
    return { ...scanAll(readers, opts), restoring, partitions };
  }

  /**
   * A key's value wherever it lives: from this worker's state when it owns the key, else from the
   * owner's HTTP server (the URL it advertised). The library form of `GET /metadata/<store>/<key>?route=1`.
   */
  async query<T = unknown>(store: string, key: unknown, opts: ReadOptions = {}): Promise<KeyAnswer<T>> {
    const here = this.get<T>(store, key, opts);
    if (here.status !== 'elsewhere') return here;
    const { owner } = await this.locate(store, key);
    if (owner?.url === undefined || owner.clientId === this.host.clientId()) return { status: 'elsewhere', partition: here.partition, owner };
    const keyText = this.spec(store).keySerde.name === 'string' ? String(key) : JSON.stringify(key);
    const url = new URL(`/stores/${encodeURIComponent(store)}/${encodeURIComponent(keyText)}`, owner.url);
    if (opts.stale) url.searchParams.set('stale', '1');
    const res = await fetch(url, { headers: queryAuthHeaders(this.host.queryToken), signal: AbortSignal.timeout(5_000) });
    return (await res.json()) as KeyAnswer<T>;
  }

  /** Who owns a key now, from the group's coordinator (cached for a second) and the endpoints topic. */
  async locate(store: string, key: unknown): Promise<KeyLocation> {
    const spec = this.spec(store);
    const { partition, task } = this.partitionOf(store, key);
    const local = this.host.tasks.taskOf(spec.subtopology, partition) !== undefined;
    const owner = await this.#owner(spec, partition);
    return { store, partition, task, owner, local };
  }

  /** Every member of the group with its advertised URL and partitions. */
  async members(): Promise<MemberEndpoint[]> {
    const list = await this.#describe(false);
    if (list.some((m) => !this.#endpoints.has(m.clientId))) await this.#refreshEndpoints();
    return list.map((m) => this.#withUrl(m));
  }

  async #owner(spec: CompiledStore, partition: number): Promise<MemberEndpoint | undefined> {
    for (const fresh of [false, true]) {
      const list = await this.#describe(fresh);
      const found = this.#holder(list, spec, partition);
      if (found) {
        if (!this.#endpoints.has(found.clientId)) await this.#refreshEndpoints();
        return this.#withUrl(found);
      }
    }
    return undefined;
  }

  #cachedOwner(spec: CompiledStore, partition: number): MemberEndpoint | undefined {
    const found = this.#members ? this.#holder(this.#members.list, spec, partition) : undefined;
    return found ? this.#withUrl(found) : undefined;
  }

  #holder(list: readonly Omit<MemberEndpoint, 'url' | 'instanceId'>[], spec: CompiledStore, partition: number): Omit<MemberEndpoint, 'url' | 'instanceId'> | undefined {
    const names = this.host.sourceTopicsOf(spec.subtopology).map((t) => `${t}-${partition}`);
    return list.find((m) => m.partitions.some((p) => names.includes(p)));
  }

  #withUrl(m: Omit<MemberEndpoint, 'url' | 'instanceId'>): MemberEndpoint {
    const e = this.#endpoints.get(m.clientId);
    const self = m.clientId === this.host.clientId();
    return { ...m, instanceId: e?.instanceId ?? m.clientId.replace(`${this.host.appId}-`, ''), url: self ? (this.host.advertisedUrl ?? e?.url) : e?.url };
  }

  async #describe(fresh: boolean): Promise<readonly Omit<MemberEndpoint, 'url' | 'instanceId'>[]> {
    const now = (this.host.now ?? Date.now)();
    if (!fresh && this.#members && now - this.#members.at < MEMBERS_TTL_MS) return this.#members.list;
    const { connection } = this.host;
    const { members } = await connection.withAdmin(connection.bootstrap, (admin) => describeMembers(admin, this.host.appId), connection.kafka);
    this.#members = { at: now, list: members };
    return members;
  }

  async #refreshEndpoints(): Promise<void> {
    const read = await readEndpoints(this.host.connection, this.host.appId);
    this.#endpoints = new Map([...read].map(([clientId, e]) => [clientId, { url: e.url, instanceId: e.instanceId }]));
  }
}
