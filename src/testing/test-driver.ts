import type { SerdeContext } from '../serdes/serde.ts';
import type { TopologyBuilder } from '../dsl/topology-builder.ts';
import { compile } from '../graph/compile.ts';
import type { CompiledTopology } from '../graph/compiled.ts';
import type { CommitCollector, IncomingRecord, OutgoingRecord } from '../core/records.ts';
import { createTask, taskId, type Task } from '../runtime/task/task.ts';
import type { TaskOptions } from '../runtime/task/task-options.ts';
import type { Step } from '../runtime/nodes/step.ts';
import type { TaskMetrics } from '../runtime/nodes/task-state.ts';
import { RecordSizeLimits } from '../core/record-size.ts';
import { globalTableRows, type GlobalTableRows } from '../runtime/global-tables/global-tables.ts';
import { DriverBusyError, UnknownTestStoreError, UnknownTestTopicError } from './driver-errors.ts';
import { TopicLog, type LoggedRecord } from './topic-log.ts';
import { outputTopic, type PipeOptions, type TestInputTopic, type TestOutputTopic, type TopicSerdes } from './topic-handles.ts';
import { deadLetterOf, type DeadLetter } from './dead-letters.ts';
import { committedStoreView, liveStoreView, type TestStore, type TestStoreQuery } from './store-views.ts';

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

const ZERO_METRICS: TaskMetrics = { recordsProcessed: 0, deadLettered: 0, retries: 0, lateRecordsDropped: 0, duplicatesDropped: 0, staleVersionsDropped: 0, nullKeysDropped: 0 };

function then(r: Step, f: () => Step): Step {
  return r === undefined ? f() : r.then(f);
}

/**
 * Runs a topology without a broker, on the same engine as the worker: one Task per (sub-topology,
 * partition) from `createTask(compiled, ...)`, records through `task.process`. Every topic is an in-memory
 * log; records become visible (to outputs and to downstream sub-topologies, as with read_committed)
 * when their transaction commits, by default after each piped record.
 */
export class TopologyTestDriver {
  readonly compiled: CompiledTopology;
  readonly #autoCommit: boolean;
  #taskOpts: TaskOptions;
  readonly #tasks = new Map<string, Task>();
  readonly #open = new Set<Task>();
  readonly #log: TopicLog;
  /** Global tables by topic: a record piped into one updates every task's view at once, as the worker's reader does. */
  readonly #globalByTopic = new Map<string, GlobalTableRows>();
  #pending: OutgoingRecord[] = [];
  #uncommittedInputs: IncomingRecord[] = [];
  #clock: number;
  #wallClock: number;
  #busy = false;
  readonly #collector: CommitCollector = { send: (r) => void this.#pending.push(r), changelog: (r) => void this.#pending.push(r) };

  constructor(builder: TopologyBuilder, opts: TestDriverOptions = {}) {
    this.compiled = compile(builder, opts.appId !== undefined ? { appId: opts.appId } : {});
    this.#log = new TopicLog(opts.partitions ?? 1);
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

  #sourceNode(topic: string): TopicSerdes {
    for (const n of this.compiled.nodes.values()) if (n.kind === 'source' && n.topic === topic) return { keySerde: n.keySerde!, valueSerde: n.valueSerde! };
    const global = this.#globalByTopic.get(topic);
    if (global) return { keySerde: global.table.keySerde, valueSerde: global.table.valueSerde };
    const known = [...[...this.compiled.nodes.values()].filter((n) => n.kind === 'source').map((n) => n.topic!), ...this.#globalByTopic.keys()];
    throw new UnknownTestTopicError(topic, 'input', known);
  }

  #sinkNode(topic: string): TopicSerdes {
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
    const rec = this.#log.append(topic, this.#log.partitionOf(key), { key, value, timestamp, headers });
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
    return outputTopic(this.#log, topic, this.#sinkNode(topic));
  }

  /** Every committed record of any topic (changelogs and repartition topics included), in bytes. */
  records(topic: string): readonly LoggedRecord[] {
    return this.#log.records(topic);
  }

  deadLetters(): DeadLetter[] {
    return this.records(this.compiled.deadLetterTopic).map(deadLetterOf);
  }

  /** A store across all partitions, including the open transaction's writes. */
  store<K, V>(name: string): TestStore<K, V> {
    return liveStoreView(name, this.#tasksHolding(name));
  }

  /**
   * A store as a running worker's interactive queries read it (`worker.queries`, `GET /stores/...`):
   * the committed state only, so with autoCommit off nothing piped since the last commit shows.
   */
  query<K, V>(name: string): TestStoreQuery<K, V> {
    return committedStoreView(name, this.#tasksHolding(name));
  }

  #tasksHolding(store: string): () => Task[] {
    const spec = this.compiled.stores.get(store);
    if (!spec) throw new UnknownTestStoreError(store, [...this.compiled.stores.keys()]);
    return () => [...this.#tasks.values()].filter((t) => t.subtopology === spec.subtopology);
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
      const logged = this.#log.append(r.topic, r.partition ?? this.#log.partitionOf(r.key), { ...r, timestamp: r.timestamp ?? this.#clock });
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
