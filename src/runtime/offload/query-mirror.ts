import type { CompiledStore } from '../../graph/types.ts';
import { StoreReader } from '../../state/queries.ts';
import { InMemoryKeyValueStore } from '../../state/store.ts';
import { QUERYABLE_KINDS } from '../task/task-stores.ts';
import { UnknownStoreError } from '../task/task-errors.ts';
import { unpackRun, type PackedRun } from './record-transfer.ts';

/**
 * The committed state of a hosted task's queryable stores, kept on the main thread: interactive
 * queries answer synchronously on the main thread, and the task's own stores live on its processing
 * thread. Fed by what the task restores and, at each commit, by the transaction's writes (staged at
 * prepareCommit, applied on commit, dropped on rollback): it holds exactly what the task's committed
 * state holds, at the cost of a second copy of those stores (dedupe ids, join buffers and suppression
 * buffers are not queried and not copied).
 */
export class QueryMirror {
  readonly #stores = new Map<string, { readonly spec: CompiledStore; readonly committed: InMemoryKeyValueStore }>();
  #staged: { readonly stores: readonly string[]; readonly run: PackedRun } | undefined;

  constructor(
    private readonly task: string,
    specs: readonly CompiledStore[],
  ) {
    for (const spec of specs) if (QUERYABLE_KINDS.has(spec.kind)) this.#stores.set(spec.name, { spec, committed: new InMemoryKeyValueStore() });
  }

  restore(store: string, key: Buffer, value: Buffer | null): void {
    const mirrored = this.#stores.get(store)?.committed;
    if (mirrored === undefined) return;
    if (value === null) mirrored.delete(key);
    else mirrored.put(key, value);
  }

  stage(writes: { readonly stores: readonly string[]; readonly run: PackedRun } | undefined): void {
    this.#staged = writes;
  }

  commit(): void {
    const staged = this.#staged;
    this.#staged = undefined;
    if (staged === undefined) return;
    const records = unpackRun(staged.run);
    // Copied out of the transferred buffer: the views would keep the whole batch's bytes alive.
    for (let i = 0; i < records.length; i++) this.restore(staged.stores[i]!, Buffer.from(records[i]!.key!), records[i]!.value === null ? null : Buffer.from(records[i]!.value!));
  }

  rollback(): void {
    this.#staged = undefined;
  }

  reader(store: string): StoreReader {
    const mirrored = this.#stores.get(store);
    if (mirrored === undefined) throw new UnknownStoreError(this.task, store);
    return new StoreReader(mirrored.spec, mirrored.committed);
  }
}
