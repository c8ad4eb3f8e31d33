import type { Task } from '../runtime/task/task.ts';
import { scanAll } from '../state/queries.ts';

export interface TestStore<K, V> {
  get(key: K): V | undefined;
  entries(): Array<[K, V]>;
}

/** A store as interactive queries read it on a worker: committed state only, across every partition. */
export interface TestStoreQuery<K, V> {
  get(key: K): V | undefined;
  /** A bounded scan by key prefix or range (serialized key order), as `GET /stores/<store>?prefix=` answers. */
  scan(opts?: { readonly prefix?: K; readonly from?: K; readonly to?: K; readonly limit?: number }): Array<[K, V]>;
  /** A windowed store's windows of a key whose start lies in [fromMs, toMs]. */
  fetch(key: K, fromMs?: number, toMs?: number): Array<{ readonly start: number; readonly end: number; readonly value: V }>;
}

// `tasks` is asked again at every read: the driver makes a partition's task when its first record comes.

/** Store `name` across the tasks holding a partition of it, including the open transaction's writes. */
export function liveStoreView<K, V>(name: string, tasks: () => Task[]): TestStore<K, V> {
  return {
    get: (key) => {
      for (const t of tasks()) {
        const v = t.get(name, key);
        if (v !== undefined) return v as V;
      }
      return undefined;
    },
    entries: () => tasks().flatMap((t) => t.entries(name) as Array<[K, V]>),
  };
}

/** Store `name` across the tasks holding a partition of it, as their committed state reads. */
export function committedStoreView<K, V>(name: string, tasks: () => Task[]): TestStoreQuery<K, V> {
  const readers = () => tasks().map((t) => t.reader(name));
  return {
    get: (key) => {
      for (const r of readers()) {
        const v = r.get(key);
        if (v !== undefined) return v as V;
      }
      return undefined;
    },
    scan: (opts = {}) => scanAll(readers(), opts).entries.map((e) => [e.key as K, e.value as V]),
    fetch: (key, fromMs, toMs) => readers().flatMap((r) => r.fetch(key, fromMs, toMs)).map((w) => ({ start: w.start, end: w.end, value: w.value as V })),
  };
}
