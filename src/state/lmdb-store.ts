import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { open, TransactionFlags, type Database, type RootDatabase } from 'lmdb';
import { OnceflowError } from '../errors.ts';
import { mapKey, type KeyValueStore, type StoreFactory } from './store.ts';

/** LMDB refuses keys above 1978 bytes; one byte goes to the prefix that makes empty keys storable. */
export const MAX_KEY_BYTES = 1977;

export class StateKeyTooLargeError extends OnceflowError {
  readonly code = 'STATE_KEY_TOO_LARGE';
  constructor(store: string, bytes: number) {
    super(`store ${store}: a key of ${bytes} bytes exceeds the persistent store's limit of ${MAX_KEY_BYTES} bytes (use the in-memory store, or a shorter key)`);
  }
}

export class StateDirError extends OnceflowError {
  readonly code = 'STATE_DIR_UNUSABLE';
  constructor(dir: string, cause: unknown) {
    super(`cannot open the state directory ${dir}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

/** LMDB rejects empty keys, and an empty key is what a null record key serializes to. */
function lmdbKey(key: Buffer): Buffer {
  const out = Buffer.allocUnsafe(key.length + 1);
  out[0] = 0;
  key.copy(out, 1);
  return out;
}

/** Commit without waiting for fsync: durability is needed only before a checkpoint, and `sync` gives it there. */
const COMMIT_NO_FLUSH = TransactionFlags.SYNCHRONOUS_COMMIT | TransactionFlags.NO_SYNC_FLUSH;

/**
 * One store in an LMDB environment. Writes collect in a small map (reads see them) and go to LMDB
 * in one write transaction per `writeBatch` entries, or on `flush`: a write transaction per put
 * would cost a commit each. LMDB's own atomicity is not what keeps the state exact: the checkpoint
 * is, since it is only written after everything applied was flushed and synced (PersistentTaskState).
 */
export class LmdbKeyValueStore implements KeyValueStore {
  readonly #pending = new Map<string, { readonly key: Buffer; readonly value: Buffer | null }>();

  constructor(
    readonly name: string,
    private readonly db: Database<Buffer, Buffer>,
    private readonly writeBatch = 10_000,
  ) {}

  get(key: Buffer): Buffer | undefined {
    const p = this.#pending.get(mapKey(key));
    if (p !== undefined) return p.value ?? undefined;
    return this.db.get(lmdbKey(key));
  }

  put(key: Buffer, value: Buffer): void {
    if (key.length > MAX_KEY_BYTES) throw new StateKeyTooLargeError(this.name, key.length);
    this.#write(key, value);
  }

  delete(key: Buffer): void {
    this.#write(key, null);
  }

  #write(key: Buffer, value: Buffer | null): void {
    this.#pending.set(mapKey(key), { key, value });
    if (this.#pending.size >= this.writeBatch) this.flush();
  }

  *entries(): IterableIterator<readonly [Buffer, Buffer]> {
    this.flush();
    for (const { key, value } of this.db.getRange()) yield [key.subarray(1), value];
  }

  get size(): number {
    this.flush();
    return (this.db.getStats() as { entryCount: number }).entryCount;
  }

  flush(): void {
    if (this.#pending.size === 0) return;
    this.db.transactionSync(() => {
      for (const { key, value } of this.#pending.values()) {
        if (value === null) this.db.removeSync(lmdbKey(key));
        else this.db.putSync(lmdbKey(key), value);
      }
    }, COMMIT_NO_FLUSH);
    this.#pending.clear();
  }

  clear(): void {
    this.#pending.clear();
    this.db.clearSync();
  }
}

export interface ChangelogOffset {
  readonly topic: string;
  readonly partition: number;
  /** The next changelog offset not reflected in the store. */
  readonly offset: number;
}

const CHECKPOINT_FILE = '.checkpoint';
const cpKey = (topic: string, partition: number): string => `${topic}\u0000${partition}`;

/** Offsets by topic+partition; undefined when there is no usable checkpoint (none, or unreadable). */
export function readCheckpoint(dir: string): Map<string, number> | undefined {
  let text: string;
  try {
    text = readFileSync(join(dir, CHECKPOINT_FILE), 'utf8');
  } catch {
    return undefined;
  }
  try {
    const parsed = JSON.parse(text) as { version?: unknown; offsets?: unknown };
    if (parsed.version !== 1 || !Array.isArray(parsed.offsets)) return undefined;
    const out = new Map<string, number>();
    for (const o of parsed.offsets as Partial<ChangelogOffset>[]) {
      if (typeof o.topic !== 'string' || !Number.isInteger(o.partition) || !Number.isInteger(o.offset)) return undefined;
      out.set(cpKey(o.topic, o.partition!), o.offset!);
    }
    return out;
  } catch {
    return undefined;
  }
}

/** Written to a temporary file, synced and renamed, so a crash leaves the old checkpoint or the new one. */
export function writeCheckpoint(dir: string, offsets: readonly ChangelogOffset[]): void {
  const tmp = join(dir, `${CHECKPOINT_FILE}.tmp`);
  writeFileSync(tmp, JSON.stringify({ version: 1, offsets }), { flush: true });
  renameSync(tmp, join(dir, CHECKPOINT_FILE));
}

/**
 * The persistent stores of one task: an LMDB environment in `dir` with one named database per
 * store, and the changelog-offset checkpoint beside it. A store only ever receives committed writes
 * (TransactionalStore applies a transaction's writes once it has committed, restore applies committed
 * changelog records), so a checkpoint is a lower bound: every changelog record below it is in the
 * store, and later ones may be too. Replaying the changelog from the checkpoint to its end then
 * rebuilds the exact state, since each record holds a key's whole value (or its tombstone) and the
 * last one wins. So a checkpoint stays valid while the task processes and after a SIGKILL:
 *  - on open, no checkpoint means the stores were never synced under one: the directory is wiped,
 *    so the stores are rebuilt from the whole changelog;
 *  - while processing, `checkpoint` syncs the stores and records offsets the caller knows to be
 *    covered (task-manager.ts takes them from changelog ends read one commit earlier);
 *  - on a clean close, after the last commit, the stores are synced and each changelog's end written.
 * The environment opens lazily, with the first store: a stateless task leaves nothing on disk.
 */
export class PersistentTaskState {
  #root: RootDatabase | undefined;
  #checkpoint: Map<string, number> | undefined;
  readonly #stores = new Map<string, LmdbKeyValueStore>();

  constructor(readonly dir: string) {}

  readonly storeFactory: StoreFactory = (req) => {
    const root = this.#open();
    const store = new LmdbKeyValueStore(req.name, root.openDB<Buffer, Buffer>({ name: req.name, keyEncoding: 'binary', encoding: 'binary' }));
    this.#stores.set(req.name, store);
    return store;
  };

  #open(): RootDatabase {
    if (this.#root) return this.#root;
    try {
      this.#checkpoint = readCheckpoint(this.dir);
      if (this.#checkpoint === undefined) rmSync(this.dir, { recursive: true, force: true });
      mkdirSync(this.dir, { recursive: true });
      this.#root = open({ path: join(this.dir, 'lmdb'), maxDbs: 64, noMemInit: true });
    } catch (e) {
      throw new StateDirError(this.dir, e);
    }
    return this.#root;
  }

  /**
   * Where restoring `store` from its changelog partition starts, given the partition's offsets now.
   * A store the checkpoint does not cover, or a checkpoint outside [low, high] (topic recreated,
   * records deleted), is emptied and restored from `low`.
   */
  restoreFrom(store: string, topic: string, partition: number, low: number, high: number): number {
    const s = this.#stores.get(store);
    const at = this.#checkpoint?.get(cpKey(topic, partition));
    if (s && at !== undefined && at >= low && at <= high) return at;
    s?.clear();
    return low;
  }

  /** Called once restored, before processing: the checkpoint read at open has served. */
  startProcessing(): void {
    this.#checkpoint = undefined;
  }

  /** Makes the stores durable, then records `offsets`: every changelog record below them must already be in the stores. */
  async checkpoint(offsets: readonly ChangelogOffset[]): Promise<void> {
    const root = this.#root;
    if (!root) return;
    for (const s of this.#stores.values()) s.flush();
    await syncToDisk(root);
    writeCheckpoint(this.dir, offsets);
  }

  /** Closes the environment; with `checkpoint`, first makes the stores durable and records where they end. */
  async close(checkpoint?: readonly ChangelogOffset[]): Promise<void> {
    const root = this.#root;
    if (!root) return;
    this.#root = undefined;
    if (checkpoint) {
      for (const s of this.#stores.values()) s.flush();
      await syncToDisk(root);
      writeCheckpoint(this.dir, checkpoint);
    }
    this.#stores.clear();
    await root.close();
  }
}

/** mdb_env_sync: lmdb-js has it on the root database but leaves it out of its types. */
function syncToDisk(root: RootDatabase): Promise<void> {
  const env = root as unknown as { sync(callback: (err: unknown) => void): void };
  return new Promise((resolve, reject) => env.sync((err) => (err ? reject(err) : resolve())));
}
