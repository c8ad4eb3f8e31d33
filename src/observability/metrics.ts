import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { WorkerEvent, WorkerStats } from '../runtime/base/worker-events.ts';
import type { ObservedWorker, PartitionLag, TopicRecordCount } from './worker-view.ts';

export interface MetricsOptions {
  /** Value of the `app` label on every series; defaults to the worker's app id. */
  readonly app?: string;
  /** Registry to fill; by default a fresh one, so two workers in one process never share series. */
  readonly registry?: Registry;
  /** Process metrics (memory, CPU, event-loop lag) as `onceflow_*`; default true. Off when several workers share a process and one already reports them. */
  readonly processMetrics?: boolean;
  /** Per-partition consumer lag, read on each scrape; default: the worker's own `partitionLag()`. */
  readonly lag?: () => readonly PartitionLag[] | Promise<readonly PartitionLag[]>;
  /** Per-topic record counts, read on each scrape; default: the worker's own `topicRecords()`. */
  readonly topicRecords?: () => readonly TopicRecordCount[];
}

export interface AttachedMetrics {
  readonly registry: Registry;
  /** Text exposition format, what `/metrics` serves. */
  metrics(): Promise<string>;
  readonly contentType: string;
  detach(): void;
}

/** Commit latency under EOS: one sendOffsetsToTransaction + EndTxn round trip, usually milliseconds, seconds when a broker struggles. */
const COMMIT_BUCKETS = [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const RECORDS_BUCKETS = [1, 10, 100, 500, 1_000, 5_000, 10_000, 20_000, 50_000];

/**
 * Counters mirror `worker.stats` at scrape time instead of counting events: the worker's stats are
 * the one source of truth (at-least-once commits, for instance, emit no `committed` event), and a
 * scrape can never disagree with them. Distributions and labelled counts come from events.
 */
export function attachMetrics(worker: ObservedWorker, options: MetricsOptions = {}): AttachedMetrics {
  const registry = options.registry ?? new Registry();
  const app = options.app ?? worker.config.appId;
  registry.setDefaultLabels({ app });
  const registers = [registry];

  const fromStats = (name: string, help: string, field: keyof WorkerStats): void => {
    let reported = 0;
    const counter: Counter = new Counter({
      name,
      help,
      registers,
      collect() {
        const now = worker.stats[field];
        // A counter only goes up; a smaller value means the stats object was reset, so count it afresh.
        const delta = now >= reported ? now - reported : now;
        reported = now;
        if (delta > 0) counter.inc(delta);
      },
    });
  };
  fromStats('onceflow_records_consumed_total', 'Records read from source topics and processed in a transaction', 'recordsConsumed');
  fromStats('onceflow_records_produced_total', 'Records produced to sink, repartition, changelog and dead-letter topics', 'recordsProduced');
  fromStats('onceflow_transactions_committed_total', 'Transactions committed (under at_least_once: offset commits)', 'transactionsCommitted');
  fromStats('onceflow_transactions_aborted_total', 'Transactions aborted and rewound to the last commit', 'transactionsAborted');
  fromStats('onceflow_rebalances_total', 'Partition assignments and revocations handled', 'rebalances');
  fromStats('onceflow_late_records_dropped_total', 'Records dropped by windowed aggregates: every window they belong to had closed (stream time past end + grace)', 'lateRecordsDropped');
  fromStats('onceflow_duplicates_dropped_total', 'Records dropped by dedupe stages: their id was seen within the TTL', 'duplicatesDropped');
  fromStats('onceflow_stale_versions_dropped_total', 'Records dropped by version guards (not newer than the stored version of their key) and foreign-key join answers to an older value of their left row', 'staleVersionsDropped');
  fromStats('onceflow_restore_records_total', 'Changelog records replayed into state stores', 'restoredRecords');
  fromStats('onceflow_standby_records_total', 'Changelog records applied to warm copies of tasks other replicas own (standby tasks)', 'standbyRecords');
  fromStats('onceflow_fencing_events_total', 'Times the producer was fenced or failed fatally and was replaced', 'fencings');
  fromStats('onceflow_enforced_processing_total', 'Times a task with several inputs stopped waiting for one that was behind and went on (maxTaskIdleMs): records of that input may then join late', 'enforcedProcessing');
  new Gauge({
    name: 'onceflow_task_idle_seconds',
    help: 'Time tasks spent waiting for one of their inputs to catch up, summed over tasks since start (a gauge: the worker reports totals)',
    registers,
    collect() {
      this.set(worker.stats.taskIdleMs / 1000);
    },
  });

  new Gauge({
    name: 'onceflow_restore_remaining_records',
    help: 'Changelog records the running restores have still to read (0 when none runs)',
    registers,
    collect() {
      this.set(worker.stats.restoreRemaining);
    },
  });
  new Gauge({
    name: 'onceflow_standby_lag_records',
    help: 'Changelog records the warm copies of standby tasks have still to apply (what a takeover now would restore)',
    registers,
    collect() {
      this.set(worker.stats.standbyLag);
    },
  });
  new Gauge({
    name: 'onceflow_standby_tasks',
    help: 'Tasks of other replicas this worker keeps warm (standbyReplicas)',
    registers,
    collect() {
      this.set(worker.stats.standbyTasks);
    },
  });
  new Gauge({
    name: 'onceflow_tasks_assigned',
    help: 'Tasks this worker owns now',
    registers,
    collect() {
      this.set(worker.stats.tasks);
    },
  });
  new Gauge({
    name: 'onceflow_last_commit_timestamp_seconds',
    help: 'Unix time of the last successful commit (0 before the first)',
    registers,
    collect() {
      this.set(worker.stats.lastCommitAt / 1000);
    },
  });
  // Who and in which state: the console matches a scrape to a group member by its client id (the transactional id).
  new Gauge({
    name: 'onceflow_worker_info',
    help: 'Always 1; labels: the transactional id (also the client id of its Kafka clients) and the lifecycle state',
    labelNames: ['transactional_id', 'state'] as const,
    registers,
    collect() {
      this.reset();
      this.set({ transactional_id: worker.transactionalId, state: worker.state ?? 'unknown' }, 1);
    },
  });
  const commitLatency = new Histogram({
    name: 'onceflow_commit_latency_seconds',
    help: 'Time to commit a transaction: offsets to the transaction plus EndTxn',
    buckets: COMMIT_BUCKETS,
    registers,
  });
  const recordsPerTxn = new Histogram({
    name: 'onceflow_records_per_transaction',
    help: 'Source records processed in each committed transaction',
    buckets: RECORDS_BUCKETS,
    registers,
  });
  const dlq = new Counter({
    name: 'onceflow_dlq_records_total',
    help: 'Records sent to a dead-letter topic, by the stage and error code that rejected them',
    labelNames: ['stage', 'code'] as const,
    registers,
  });
  // No series until the first dead-lettered record: alert on `increase(...) > 0`, not on absence.

  const transitionCounts = worker.transitionCounts?.bind(worker);
  if (transitionCounts) {
    new Gauge({
      name: 'onceflow_state_transitions',
      help: 'Moves of the worker lifecycle and of its producer transaction states since start, by machine and move (a gauge: the worker reports totals)',
      labelNames: ['machine', 'from', 'to'] as const,
      registers,
      collect() {
        this.reset();
        for (const t of transitionCounts()) this.set({ machine: t.machine, from: t.from, to: t.to }, t.count);
      },
    });
  }
  const joinMisses = worker.joinMisses?.bind(worker);
  if (joinMisses) {
    new Gauge({
      name: 'onceflow_join_misses',
      help: 'Stream records a table join found no row for, per join stage (an inner join drops them; a gauge: the worker reports totals)',
      labelNames: ['join'] as const,
      registers,
      collect() {
        this.reset();
        for (const [join, misses] of joinMisses()) this.set({ join }, misses);
      },
    });
  }
  const waiting = worker.waitingTasks?.bind(worker);
  if (waiting) {
    new Gauge({
      name: 'onceflow_task_waiting_seconds',
      help: 'Tasks waiting now for one of their inputs, by task and the input they wait for, and for how long',
      labelNames: ['task', 'input'] as const,
      registers,
      collect() {
        this.reset();
        for (const w of waiting()) this.set({ task: w.task, input: w.partition.replace('\u0000', '-') }, w.forMs / 1000);
      },
    });
  }
  const lag = options.lag ?? worker.partitionLag?.bind(worker);
  if (lag) {
    new Gauge({
      name: 'onceflow_consumer_lag',
      help: 'Records between the committed offset and the end (read_committed) of each assigned source partition',
      labelNames: ['topic', 'partition'] as const,
      registers,
      async collect() {
        const entries = await lag();
        this.reset();
        for (const e of entries) this.set({ topic: e.topic, partition: String(e.partition) }, e.lag);
      },
    });
  }
  const topicRecords = options.topicRecords ?? worker.topicRecords?.bind(worker);
  if (topicRecords) {
    new Gauge({
      name: 'onceflow_topic_records_consumed',
      help: 'Records consumed per source topic since start (a gauge: the worker reports totals)',
      labelNames: ['topic'] as const,
      registers,
      collect() {
        this.reset();
        for (const t of topicRecords()) this.set({ topic: t.topic }, t.consumed);
      },
    });
    new Gauge({
      name: 'onceflow_topic_records_produced',
      help: 'Records produced per topic since start (a gauge: the worker reports totals)',
      labelNames: ['topic'] as const,
      registers,
      collect() {
        this.reset();
        for (const t of topicRecords()) this.set({ topic: t.topic }, t.produced);
      },
    });
  }

  if (options.processMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: 'onceflow_' });

  const onEvent = (e: WorkerEvent): void => {
    if (e.type === 'committed') {
      commitLatency.observe(e.ms / 1000);
      recordsPerTxn.observe(e.records);
    } else if (e.type === 'dead-lettered') {
      dlq.inc({ stage: e.stage, code: e.code });
    }
  };
  worker.on('event', onEvent);

  return {
    registry,
    contentType: registry.contentType,
    metrics: () => registry.metrics(),
    detach() {
      worker.off('event', onEvent);
      registry.clear();
    },
  };
}
