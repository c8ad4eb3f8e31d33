import { OnceflowError } from '../errors.ts';
import type { Serde, SerdeContext } from '../serdes/serde.ts';
import type { TopologyBuilder } from '../dsl/topology-builder.ts';
import { compile } from '../graph/compile.ts';
import type { CompiledTopology } from '../graph/compiled.ts';
import type { CommitCollector, IncomingRecord, OutgoingRecord, RecordHeader } from '../core/records.ts';
import { createTask, taskId, type Step, type Task, type TaskMetrics, type TaskOptions } from '../runtime/task/task.ts';
import { scanAll } from '../state/queries.ts';
import { partitionFor } from './partitioner.ts';
import { DEAD_LETTER } from '../core/headers.ts';
import { RecordSizeLimits } from '../core/record-size.ts';
import { globalTableRows, type GlobalTableRows } from '../runtime/global-tables/global-tables.ts';

export class UnknownTestTopicError extends OnceflowError {
  readonly code = 'UNKNOWN_TEST_TOPIC';
  constructor(topic: string, role: 'input' | 'output', known: readonly string[]) {
    super(`${JSON.stringify(topic)} is not an ${role} topic of this topology; ${role} topics: ${known.join(', ') || '(none)'}`);
  }
}

export class UnknownTestStoreError extends OnceflowError {
  readonly code = 'UNKNOWN_TEST_STORE';
  constructor(store: string, known: readonly string[]) {
    super(`${JSON.stringify(store)} is not a store of this topology; stores: ${known.join(', ') || '(none)'}`);
  }
}

export class DriverBusyError extends OnceflowError {
  readonly code = 'DRIVER_BUSY';
  constructor() {
    super('the driver is still processing; await the promise the previous call returned');
  }
}

export interface TestDriverOptions {
  readonly appId?: string;
  /** Partitions of every topic (default 1). Keys are placed with Kafka's murmur2 partitioner. */
  readonly partitions?: number;
  /** Timestamp of records piped without one, until advanceStreamTime moves it (default 0). */
  readonly startTimeMs?: number;
  /** Commit after every piped record (default true). With false, call commit() / abort() yourself. */
  readonly autoCommit?: boolean;
  /** Keys each aggregate holds back until the commit, as the worker's record cache does (default 0: every update goes downstream, so each piped record's results can be read at once). */
  readonly cacheMaxRecords?: number;
  readonly sleep?: (ms: number) => Promise<void>;
  readonly random?: () => number;
  /** The wall clock of the tasks (error-time headers, wall-clock punctuations); default: a driver clock starting at `wallClockStartMs`, moved by advanceWallClockTime. */
  readonly now?: () => number;
  /** Where the driver's wall clock starts (default: Date.now() when the driver is made). */
  readonly wallClockStartMs?: number;
  /** The producer's message.max.bytes, as the worker's `kafka.message.max.bytes` (default librdkafka's, 1,000,000). */
  readonly messageMaxBytes?: number;
  /** Topics' max.message.bytes, as the worker learns them from the broker at start: a record over one is dead-lettered. */
  readonly topicMaxMessageBytes?: Readonly<Record<string, number>>;
}

export interface PipeOptions {
  readonly timestamp?: number;
  readonly headers?: Readonly<Record<string, string>>;
}

export interface TestRecord<K, V> {
  readonly key: K;
  readonly value: V;
  readonly timestamp: number;
  readonly partition: number;
  readonly offset: number;
  readonly headers: Readonly<Record<string, string>>;
}

/** A committed record of the dead-letter topic, with its error headers unpacked. */
export interface DeadLetter {
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly timestamp: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly code: string;
  readonly message: string;
  readonly stage: string;
  readonly attempts: number;
  readonly source: { readonly topic: string; readonly partition: number; readonly offset: number };
  /** Set when the dead letter carries only the first bytes of the input's key and value: their full sizes. */
  readonly excerpt?: { readonly keyBytes: number; readonly valueBytes: number };
}

/** A committed record as it sits in a topic of the driver's in-memory log. */
export interface LoggedRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly timestamp: number;
  readonly headers: readonly RecordHeader[];
}

export interface TestInputTopic<K, V> {
  /** A null value is a tombstone: it deletes the key's row of a table. */
  pipe(key: K, value: V | null, opts?: PipeOptions): Step;
  /** Pipes bytes as they are, e.g. a value that does not decode. */
  pipeRaw(key: Buffer | null, value: Buffer | null, opts?: PipeOptions): Step;
}

export interface TestOutputTopic<K, V> {
  /** Reads (and consumes) every committed record not read yet. */
  readRecords(): TestRecord<K, V>[];
  readKeyValues(): Array<[K, V]>;
  readValues(): V[];
  isEmpty(): boolean;
}

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

const ZERO_METRICS: TaskMetrics = { recordsProcessed: 0, deadLettered: 0, retries: 0, lateRecordsDropped: 0, duplicatesDropped: 0, staleVersionsDropped: 0, nullKeysDropped: 0 };

function then(r: Step, f: () => Step): Step {
  return r === undefined ? f() : r.then(f);
}

function headersToObject(hs: readonly RecordHeader[]): Record<string, string> {
  const o: Record<string, string> = {};
  for (const h of hs) o[h.key] = h.value.toString('utf8');
  return o;
}

/**
 * Runs a topology without a broker, on the same engine as the worker: one Task per (sub-topology,
 * partition) from `createTask(compiled, ...)`, records through `task.process`. Every topic is an in-memory
 * log; records become visible (to outputs and to downstream sub-topologies, as with read_committed)
 * when their transaction commits, by default after each piped record.
 */
export class TopologyTestDriver {
  readonly compiled: CompiledTopology;
  readonly #partitions: number;
  readonly #autoCommit: boolean;
  #taskOpts: TaskOptions;
  readonly #tasks = new Map<string, Task>();
  readonly #open = new Set<Task>();
  readonly #logs = new Map<string, LoggedRecord[]>();
  readonly #offsets = new Map<string, number>();
  readonly #readPos = new Map<string, number>();
  /** Global tables by topic: a record piped into one updates every task's view at once, as the worker's reader does. */
  readonly #globalByTopic = new Map<string, GlobalTableRows>();
  #pending: OutgoingRecord[] = [];
  #uncommittedInputs: IncomingRecord[] = [];
  #clock: number;
  #wallClock: number;
  #roundRobin = 0;
  #busy = false;
  readonly #collector: CommitCollector = { send: (r) => void this.#pending.push(r), changelog: (r) => void this.#pending.push(r) };

  constructor(builder: TopologyBuilder, opts: TestDriverOptions = {}) {
    this.compiled = compile(builder, opts.appId !== undefined ? { appId: opts.appId } : {});
    this.#partitions = opts.partitions ?? 1;
    this.#autoCommit = opts.autoCommit ?? true;
    this.#clock = opts.startTimeMs ?? 0;
    this.#wallClock = opts.wallClockStartMs ?? Date.now();
    this.#taskOpts = {
      ...(opts.sleep ? { sleep: opts.sleep } : {}),
      ...(opts.random ? { random: opts.random } : {}),
      now: opts.now ?? (() => this.#wallClock),
      recordLimits: new RecordSizeLimits(opts.messageMaxBytes, opts.topicMaxMessageBytes ?? {}),
      ...(opts.cacheMaxRecords !== undefined ? { cache: { maxRecords: opts.cacheMaxRecords } } : {}),
    };
    const globals = globalTableRows(this.compiled.globalTables);
    for (const g of globals.values()) this.#globalByTopic.set(g.table.topic, g);
    if (globals.size > 0) this.#taskOpts = { ...this.#taskOpts, globalRows: (store) => globals.get(store) };
  }

  #sourceNode(topic: string): { keySerde: Serde<unknown>; valueSerde: Serde<unknown> } {
    for (const n of this.compiled.nodes.values()) if (n.kind === 'source' && n.topic === topic) return { keySerde: n.keySerde!, valueSerde: n.valueSerde! };
    const global = this.#globalByTopic.get(topic);
    if (global) return { keySerde: global.table.keySerde, valueSerde: global.table.valueSerde };
    const known = [...[...this.compiled.nodes.values()].filter((n) => n.kind === 'source').map((n) => n.topic!), ...this.#globalByTopic.keys()];
    throw new UnknownTestTopicError(topic, 'input', known);
  }

  #sinkNode(topic: string): { keySerde: Serde<unknown>; valueSerde: Serde<unknown> } {
    for (const n of this.compiled.nodes.values()) if ((n.kind === 'sink' || n.kind === 'repartitionSink') && n.topic === topic) return { keySerde: n.keySerde!, valueSerde: n.valueSerde! };
    const known = [...this.compiled.nodes.values()].filter((n) => n.kind === 'sink').map((n) => n.topic!);
    throw new UnknownTestTopicError(topic, 'output', known);
  }

  #task(sub: number, partition: number): Task {
    const id = taskId(sub, partition);
    let t = this.#tasks.get(id);
    if (!t) {
      t = createTask(this.compiled, sub, partition, this.#taskOpts);
      this.#tasks.set(id, t);
    }
    return t;
  }

  #partitionOf(key: Buffer | null): number {
    if (this.#partitions === 1) return 0;
    if (key === null) return this.#roundRobin++ % this.#partitions;
    return partitionFor(key, this.#partitions);
  }

  #append(topic: string, partition: number, r: { key: Buffer | null; value: Buffer | null; timestamp?: number; headers?: readonly RecordHeader[] }): LoggedRecord {
    const pk = `${topic}\u0000${partition}`;
    const offset = this.#offsets.get(pk) ?? 0;
    this.#offsets.set(pk, offset + 1);
    const rec: LoggedRecord = { topic, partition, offset, key: r.key, value: r.value, timestamp: r.timestamp ?? this.#clock, headers: r.headers ?? [] };
    (this.#logs.get(topic) ?? this.#logs.set(topic, []).get(topic)!).push(rec);
    return rec;
  }

  #guard<T extends Step>(f: () => T): Step {
    if (this.#busy) throw new DriverBusyError();
    const r = f();
    if (r === undefined) return;
    this.#busy = true;
    return r.then(
      () => {
        this.#busy = false;
      },
      (e: unknown) => {
        this.#busy = false;
        throw e;
      },
    );
  }

  #deliver(rec: IncomingRecord): Step {
    const sub = this.compiled.subtopologyOf(rec.topic)!;
    const task = this.#task(sub, rec.partition);
    this.#open.add(task);
    this.#uncommittedInputs.push(rec);
    return task.process(rec, this.#collector);
  }

  #deliverAll(recs: readonly IncomingRecord[], from: number): Step {
    for (let i = from; i < recs.length; i++) {
      const r = this.#deliver(recs[i]!);
      if (r !== undefined) return r.then(() => this.#deliverAll(recs, i + 1));
    }
  }

  #pipe(topic: string, key: Buffer | null, value: Buffer | null, opts: PipeOptions = {}): Step {
    const timestamp = opts.timestamp ?? this.#clock;
    if (timestamp > this.#clock) this.#clock = timestamp;
    const headers = Object.entries(opts.headers ?? {}).map(([k, v]) => ({ key: k, value: Buffer.from(v, 'utf8') }));
    const rec = this.#append(topic, this.#partitionOf(key), { key, value, timestamp, headers });
    const global = this.#globalByTopic.get(topic);
    if (global) {
      global.apply(key, value);
      return;
    }
    return then(this.#deliver(rec), () => (this.#autoCommit ? this.#commit() : undefined));
  }

  input<K, V>(topic: string): TestInputTopic<K, V> {
    const { keySerde, valueSerde } = this.#sourceNode(topic);
    const kctx: SerdeContext = { topic, role: 'key' };
    const vctx: SerdeContext = { topic, role: 'value' };
    return {
      pipe: (key, value, opts) => this.#guard(() => this.#pipe(topic, keySerde.serialize(key, kctx), value === null ? null : valueSerde.serialize(value, vctx), opts)),
      pipeRaw: (key, value, opts) => this.#guard(() => this.#pipe(topic, key, value, opts)),
    };
  }

  output<K, V>(topic: string): TestOutputTopic<K, V> {
    const { keySerde, valueSerde } = this.#sinkNode(topic);
    const kctx: SerdeContext = { topic, role: 'key' };
    const vctx: SerdeContext = { topic, role: 'value' };
    const read = (): TestRecord<K, V>[] => {
      const log = this.#logs.get(topic) ?? [];
      const from = this.#readPos.get(topic) ?? 0;
      this.#readPos.set(topic, log.length);
      return log.slice(from).map((r) => ({
        key: keySerde.deserialize(r.key, kctx) as K,
        value: valueSerde.deserialize(r.value, vctx) as V,
        timestamp: r.timestamp,
        partition: r.partition,
        offset: r.offset,
        headers: headersToObject(r.headers),
      }));
    };
    return {
      readRecords: read,
      readKeyValues: () => read().map((r) => [r.key, r.value]),
      readValues: () => read().map((r) => r.value),
      isEmpty: () => (this.#logs.get(topic)?.length ?? 0) <= (this.#readPos.get(topic) ?? 0),
    };
  }

  /** Every committed record of any topic (changelogs and repartition topics included), in bytes. */
  records(topic: string): readonly LoggedRecord[] {
    return this.#logs.get(topic) ?? [];
  }

  deadLetters(): DeadLetter[] {
    return this.records(this.compiled.deadLetterTopic).map((r) => {
      const h = headersToObject(r.headers);
      return {
        key: r.key,
        value: r.value,
        timestamp: r.timestamp,
        headers: h,
        code: h[DEAD_LETTER.code] ?? '',
        message: h[DEAD_LETTER.message] ?? '',
        stage: h[DEAD_LETTER.stage] ?? '',
        attempts: Number(h[DEAD_LETTER.attempts]),
        source: { topic: h[DEAD_LETTER.sourceTopic] ?? '', partition: Number(h[DEAD_LETTER.sourcePartition]), offset: Number(h[DEAD_LETTER.sourceOffset]) },
        ...(h[DEAD_LETTER.excerpt] === undefined ? {} : { excerpt: { keyBytes: Number(h[DEAD_LETTER.keyBytes]), valueBytes: Number(h[DEAD_LETTER.valueBytes]) } }),
      };
    });
  }

  /** A store across all partitions, including the open transaction's writes. */
  store<K, V>(name: string): TestStore<K, V> {
    const spec = this.compiled.stores.get(name);
    if (!spec) throw new UnknownTestStoreError(name, [...this.compiled.stores.keys()]);
    const tasks = (): Task[] => [...this.#tasks.values()].filter((t) => t.subtopology === spec.subtopology);
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

  /**
   * A store as a running worker's interactive queries read it (`worker.queries`, `GET /stores/...`):
   * the committed state only, so with autoCommit off nothing piped since the last commit shows.
   */
  query<K, V>(name: string): TestStoreQuery<K, V> {
    const spec = this.compiled.stores.get(name);
    if (!spec) throw new UnknownTestStoreError(name, [...this.compiled.stores.keys()]);
    const readers = () => [...this.#tasks.values()].filter((t) => t.subtopology === spec.subtopology).map((t) => t.reader(name));
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

  /** Metrics summed over every task. */
  metrics(): TaskMetrics {
    const sum: TaskMetrics = { ...ZERO_METRICS };
    for (const t of this.#tasks.values()) for (const k of Object.keys(sum) as (keyof TaskMetrics)[]) sum[k] += t.metrics[k];
    return sum;
  }

  task(subtopology: number, partition: number): Task {
    return this.#task(subtopology, partition);
  }

  /**
   * Moves the driver clock `ms` past the latest timestamp seen and every task's stream time to it, so
   * windows close without a record. Commits when autoCommit is on.
   */
  advanceStreamTime(ms: number): Step {
    return this.#guard(() => {
      this.#clock += ms;
      const tasks = [...this.#tasks.values()];
      const step = (i: number): Step => {
        for (; i < tasks.length; i++) {
          const t = tasks[i]!;
          this.#open.add(t);
          const r = t.advanceStreamTime(this.#clock, this.#collector);
          if (r !== undefined) return r.then(() => step(i + 1));
        }
      };
      return then(step(0), () => (this.#autoCommit ? this.#commit() : undefined));
    });
  }

  /**
   * Moves the driver's wall clock `ms` on and runs the wall-clock punctuations now due, as the worker's
   * loop does between batches (inside the open transaction). Commits when autoCommit is on.
   */
  advanceWallClockTime(ms: number): Step {
    return this.#guard(() => {
      this.#wallClock += ms;
      const now = this.#wallClock;
      const tasks = [...this.#tasks.values()].filter((t) => t.punctuatesOnWallClock);
      const step = (i: number): Step => {
        for (; i < tasks.length; i++) {
          const t = tasks[i]!;
          this.#open.add(t);
          const r = t.punctuateWallClock(now, this.#collector);
          if (r !== undefined) return r.then(() => step(i + 1));
        }
      };
      return then(step(0), () => (this.#autoCommit ? this.#commit() : undefined));
    });
  }

  /** The driver's wall clock (see advanceWallClockTime). */
  get wallClockTime(): number {
    return this.#wallClock;
  }

  /** Commits the open transaction, then lets downstream sub-topologies process what it released. */
  commit(): Step {
    return this.#guard(() => this.#commit());
  }

  #commit(): Step {
    // As the worker does before sending the offsets: what the tasks held back joins the transaction.
    return then(this.#prepareCommit([...this.#open], 0), () => this.#commitPrepared());
  }

  #prepareCommit(tasks: readonly Task[], from: number): Step {
    for (let i = from; i < tasks.length; i++) {
      const r = tasks[i]!.prepareCommit(this.#collector);
      if (r !== undefined) return r.then(() => this.#prepareCommit(tasks, i + 1));
    }
  }

  #commitPrepared(): Step {
    for (const t of this.#open) t.commit();
    this.#open.clear();
    const routed: IncomingRecord[] = [];
    for (const r of this.#pending) {
      const logged = this.#append(r.topic, r.partition ?? this.#partitionOf(r.key), r);
      if (this.compiled.subtopologyOf(r.topic) !== undefined) routed.push(logged);
    }
    this.#pending = [];
    this.#uncommittedInputs = [];
    if (routed.length === 0) return;
    return then(this.#deliverAll(routed, 0), () => this.#commit());
  }

  /**
   * Aborts the open transaction: store writes roll back and its outputs are never seen. With
   * `redeliver`, the aborted inputs are processed again from the same offsets, as after a crash.
   */
  abort(opts: { readonly redeliver?: boolean } = {}): Step {
    return this.#guard(() => {
      for (const t of this.#open) t.rollback();
      this.#open.clear();
      this.#pending = [];
      const inputs = this.#uncommittedInputs;
      this.#uncommittedInputs = [];
      if (!opts.redeliver || inputs.length === 0) return;
      return then(this.#deliverAll(inputs, 0), () => (this.#autoCommit ? this.#commit() : undefined));
    });
  }
}
