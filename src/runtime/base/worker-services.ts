import type { KafkaConsumer } from '@confluentinc/kafka-javascript';
import type { RdConfig } from '../../kafka/clients.ts';
import type { ClientSupplier } from './client-supplier.ts';
import type { ResolvedWorkerConfig } from './config.ts';
import type { FaultHook } from './faults.ts';
import type { RecordTracer } from '../../observability/tracing/port.ts';
import type { WorkerEvent, WorkerStats } from './worker-events.ts';

/** What the worker's parts share: its config, counters, event stream and clients. */
export interface WorkerServices {
  readonly config: ResolvedWorkerConfig;
  readonly transactionalId: string;
  readonly stats: WorkerStats;
  readonly clients: ClientSupplier;
  readonly faults: FaultHook;
  emit(event: WorkerEvent): void;
  /** bootstrap, client.id (the transactional id: how a namesake is recognised) and the user's options */
  clientConfig(): RdConfig;
  /** Undefined before start and after close. */
  consumer(): KafkaConsumer | undefined;
  /** The worker's tracer once started with tracing on (observability/tracing/); null otherwise, and every caller checks that alone. */
  tracer: RecordTracer | null;
  /** Names the step the loop is in now (loop-watch.ts): a step that lasts for minutes is reported by that name. */
  step(name: string): void;
}
