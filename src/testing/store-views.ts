import type { Task } from '../runtime/task/task.ts';
import { scanAll } from '../state/queries.ts';

export interface TestStore<K, V> {
  get(key: K): V | undefined;
  /** A versioned table's value of `key` at `asOf`, as long as its history holds that time. */
  getAsOf(key: K, asOf: number): V | undefined;
  entries(): Array<[K, V]>;
}

/** A store as interactive queries read it on a worker: committed state only, across every partition. */
export interface TestStoreQuery<K, V> {
  get(key: K): V | undefined;
  /** A versioned table's value of `key` at `asOf`, as long as its history holds that time. */
  getAsOf(key: K, asOf: number): V | undefined;
  /** A bounded scan by key prefix or range (serialized key order), as `GET /stores/<store>?prefix=` answers. */
  scan(opts?: { readonly prefix?: K; readonly from?: K; readonly to?: K; readonly limit?: number }): Array<[K, V]>;
  /** A windowed store's windows of a key whose start lies in [fromMs, toMs]. */
  fetch(key: K, fromMs?: number, toMs?: number): Array<{ readonly start: number; readonly end: number; readonly value: V }>;
}

// `tasks` is asked again at every read: the driver makes a partition's task when its first record comes.

/** Store `name` across the tasks holding a partition of it, including the open transaction's writes. */
export function liveStoreView<K, V>(name: string, tasks: () => Task[]): TestStore<K, V> {
  return {
    get: (key) => firstFound(tasks(), (t) => t.get(name, key)) as V | undefined,
    getAsOf: (key, asOf) => firstFound(tasks(), (t) => t.getAsOf(name, key, asOf)) as V | undefined,
    entries: () => tasks().flatMap((t) => t.entries(name) as Array<[K, V]>),
  };
}

/** Store `name` across the tasks holding a partition of it, as their committed state reads. */
export function committedStoreView<K, V>(name: string, tasks: () => Task[]): TestStoreQuery<K, V> {
  const readers = () => tasks().map((t) => t.reader(name));
  return {
    get: (key) => firstFound(readers(), (r) => r.get(key)) as V | undefined,
    getAsOf: (key, asOf) => firstFound(readers(), (r) => r.getAsOf(key, asOf)) as V | undefined,
    scan: (opts = {}) => scanAll(readers(), opts).entries.map((e) => [e.key as K, e.value as V]),
    fetch: (key, fromMs, toMs) => readers().flatMap((r) => r.fetch(key, fromMs, toMs)).map((w) => ({ start: w.start, end: w.end, value: w.value as V })),
  };
}

/** The first partition's answer: a key lives in one partition, the others answer undefined. */
function firstFound<T>(parts: readonly T[], read: (part: T) => unknown): unknown {
  for (const part of parts) {
    const v = read(part);
    if (v !== undefined) return v;
  }
  return undefined;
}
