import type { CommitCollector } from '../../core/records.ts';
import type { RecordSizeLimits } from '../../core/record-size.ts';
import type { CompiledStore, CompiledSubtopology, TaskPlan } from '../../graph/types.ts';
import { StoreReader } from '../../state/queries.ts';
import type { StoreFactory } from '../../state/store.ts';
import { StoreKeys } from '../../state/store-keys.ts';
import { TransactionalStore } from '../../state/transactional.ts';
import { latestValue, valueAsOf } from '../../state/versioned.ts';
import { heldValue } from '../nodes/suppress.ts';
import { UnknownStoreError } from './task-errors.ts';

/** The kinds of store interactive queries read (a versioned one as of a time too): the rest are a stage's bookkeeping (dedupe ids, held-back updates, join buffers). */
export const QUERYABLE_KINDS: ReadonlySet<CompiledStore['kind']> = new Set(['key-value', 'window', 'session', 'versioned']);

export interface ChangelogPartition {
  readonly store: string;
  readonly topic: string;
  readonly partition: number;
  /** The table's source topic: restored up to the group's committed offset, never written, checkpointed at that offset. */
  readonly sourceTopic?: boolean;
}

/** Where a task's stores are restored from: each one's changelog partition, or its table's source topic. */
export function changelogPartitions(stores: readonly CompiledStore[], partition: number): ChangelogPartition[] {
  return stores.map((spec) => ({ store: spec.name, topic: spec.changelogTopic, partition, ...(spec.sourceTopicChangelog ? { sourceTopic: true } : {}) }));
}

/** One store of a task, with what was compiled of it. */
export interface TaskStore {
  readonly store: TransactionalStore;
  readonly spec: CompiledStore;
}

/**
 * A task's stores: each one's writes are buffered per transaction, logged to its changelog at the
 * commit, and made the committed state or dropped with the transaction. Also what the task's stores
 * answer to readers outside the stages (the test driver, interactive queries), decoded.
 */
export class TaskStores {
  /** The changelog partitions to replay before the task's first record. */
  readonly changelogs: readonly ChangelogPartition[];
  readonly #byName = new Map<string, TaskStore>();
  readonly #all: TransactionalStore[] = [];
  /** Stores whose writes go to a changelog of their own (a table read from a topic has its topic instead). */
  readonly #logged: readonly TransactionalStore[];

  constructor(
    private readonly taskId: string,
    plan: TaskPlan,
    sub: CompiledSubtopology,
    partition: number,
    factory: StoreFactory,
    limits: RecordSizeLimits,
  ) {
    for (const name of sub.stores) {
      const spec = plan.stores.get(name)!;
      const committed = factory({ name, kind: spec.kind, subtopology: sub.id, partition });
      const store = new TransactionalStore(name, spec.changelogTopic, partition, committed, limits);
      this.#byName.set(name, { store, spec });
      this.#all.push(store);
    }
    this.changelogs = changelogPartitions([...this.#byName.values()].map(({ spec }) => spec), partition);
    this.#logged = this.#all.filter((s) => !this.#byName.get(s.name)!.spec.sourceTopicChangelog);
  }

  get empty(): boolean {
    return this.#all.length === 0;
  }

  get names(): readonly string[] {
    return [...this.#byName.keys()];
  }

  of(name: string): TaskStore {
    const s = this.#byName.get(name);
    if (!s) throw new UnknownStoreError(this.taskId, name);
    return s;
  }

  /** The record's writes stay (ok) or are undone (it failed and goes to the dead-letter topic). */
  endRecord(ok: boolean): void {
    for (const s of this.#all) s.endRecord(ok);
  }

  flushChangelogs(out: CommitCollector): void {
    for (const s of this.#logged) s.flushChangelog(out.changelog);
  }

  commit(): void {
    for (const s of this.#all) s.commit();
  }

  rollback(): void {
    for (const s of this.#all) s.rollback();
  }

  /** The open transaction's writes to the stores interactive queries read (key-value, window, session), per store. */
  *queryableWrites(): Iterable<{ readonly store: string; readonly key: Buffer; readonly value: Buffer | null }> {
    for (const [name, { store, spec }] of this.#byName) {
      if (!QUERYABLE_KINDS.has(spec.kind)) continue;
      for (const [key, value] of store.written()) yield { store: name, key, value };
    }
  }

  /** A store's current value of `key`, uncommitted writes included (window and session stores: a `Windowed<K>`). */
  get(name: string, key: unknown): unknown {
    const { store, spec } = this.of(name);
    const v = store.get(new StoreKeys(spec).encode(key));
    return v === undefined ? undefined : decodeStored(spec, v);
  }

  /** A versioned store's value of `key` at `asOf`, uncommitted writes included. */
  getAsOf(name: string, key: unknown, asOf: number): unknown {
    const { store, spec } = this.of(name);
    const history = store.get(new StoreKeys(spec).encode(key));
    const v = history === undefined ? undefined : valueAsOf(history, asOf, Number.NEGATIVE_INFINITY);
    return v === undefined ? undefined : spec.valueSerde.deserialize(v, { topic: spec.changelogTopic, role: 'value' });
  }

  /** Every entry of a store, decoded; window and session stores yield `Windowed<K>` keys. */
  entries(name: string): Array<[unknown, unknown]> {
    const { store, spec } = this.of(name);
    const keys = new StoreKeys(spec);
    return [...store.entries()].map(([k, v]): [unknown, unknown] => [keys.decode(k), decodeStored(spec, v)]).filter(([, v]) => v !== undefined);
  }

  /** A store's committed state only, never the open transaction's writes: what interactive queries answer from. */
  reader(name: string): StoreReader {
    const { store, spec } = this.of(name);
    return new StoreReader(spec, store.committed);
  }
}

/** A stored value as its stage knows it: a suppression buffer's, the update it holds back; a versioned store's, its latest version (undefined: deleted). */
function decodeStored(spec: CompiledStore, bytes: Buffer): unknown {
  const ctx = { topic: spec.changelogTopic, role: 'value' as const };
  if (spec.versioned) {
    const latest = latestValue(bytes);
    return latest === undefined ? undefined : spec.valueSerde.deserialize(latest, ctx);
  }
  if (spec.kind !== 'suppress') return spec.valueSerde.deserialize(bytes, ctx);
  const held = heldValue(bytes);
  return held === null ? null : spec.valueSerde.deserialize(held, ctx);
}
