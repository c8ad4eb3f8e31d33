import type { KafkaConsumer, Producer, TopicPartitionOffset } from '@confluentinc/kafka-javascript';
import { disconnect, type RdConfig } from '../../kafka/clients.ts';
import type { ClientSupplier } from '../base/client-supplier.ts';
import type { FaultHook, PhasePass } from '../base/faults.ts';
import { RECORD_BATCH, RECORD_BATCH_MAX_RECORDS, RECORD_BATCH_TARGET_BYTES, RecordBatchWriter, type BatchedRecord } from '../../core/record-batch.ts';
import { LINEAGE } from '../../core/headers.ts';
import { DEFAULT_BATCH_SIZE } from '../../core/record-size.ts';
import { StateMachine, type TransitionHook } from '../base/state-machine.ts';
import type { TransitionCount } from '../base/worker-events.ts';
import { classifyTxnError, isFatalOrFencing } from './kafka-errors.ts';
import { TRANSACTION_TRANSITIONS, type TransactionState } from './states.ts';

export interface OutputOptions {
  /** bootstrap, client.id and the user's librdkafka options */
  readonly clientConfig: RdConfig;
  readonly transactionalId: string;
  readonly appId: string;
  readonly transactionTimeoutMs: number;
  /** Exactly once only: offsets go through the consumer's own commit, outside the transaction (tests show what that breaks). */
  readonly unsafeCommitOffsetsOutsideTransaction: boolean;
  readonly clients: ClientSupplier;
  readonly faults: FaultHook;
  readonly onTransition?: TransitionHook;
  /** A call the producer keeps retrying (its coordinator busy or away): said each time, so a long wait is never silent. */
  readonly onRetry?: (call: string, attempt: number, error: unknown) => void;
  /** Names the call the output is about to await (the worker's loop watch reports one that never returns). */
  readonly onStep?: (step: string) => void;
}

/** What the worker does after a failed call, decided here from the error. */
export type TransactionFailure =
  /** Abort, roll the tasks back, rewind: the producer goes on. */
  | { readonly kind: 'abortable'; readonly error: unknown }
  /** The producer cannot be trusted (FENCED or COMMIT_UNKNOWN): replace it and read the outcome back. */
  | { readonly kind: 'replace'; readonly error: unknown }
  /** Nothing needs aborting at a coordinator: roll the tasks back and rewind, with `reason`. */
  | { readonly kind: 'rolled-back'; readonly error: unknown; readonly reason: string };

export interface CommitRequest {
  readonly offsets: TopicPartitionOffset[];
  /** Exactly once sends its group metadata with the offsets, so that a stale generation is fenced. */
  readonly consumer: KafkaConsumer;
  /** Emits what the tasks held back; runs inside the transaction, before its offsets go. */
  readonly prepare: () => Promise<void>;
}

export type CommitOutcome =
  /** `announced`: the worker reports it as a `committed` event (exactly once does, at least once never did). */
  | { readonly committed: true; readonly announced: boolean }
  | { readonly committed: false; readonly failure: TransactionFailure };

const PRODUCING: readonly TransactionState[] = ['IN_TRANSACTION', 'COMMITTING'];
const BATCH_HEADERS = [{ [RECORD_BATCH.header]: RECORD_BATCH.version }];

/**
 * The worker's producer under one guarantee: the states of states.ts, guarded, over whichever
 * librdkafka producer is current (a replaced one is disconnected and a new one created).
 */
export abstract class TransactionalOutput {
  protected readonly machine: StateMachine<TransactionState>;
  protected client: Producer | undefined;
  /** Repartition records of the open transaction not yet produced, per topic and partition (core/record-batch.ts). */
  private readonly batches = new Map<string, (RecordBatchWriter | undefined)[]>();
  /** Records the open transaction sent to output topics: the fault hook's context. */
  private outputRecords = 0;

  constructor(protected readonly options: OutputOptions) {
    this.machine = new StateMachine('transaction', 'UNINITIALIZED', TRANSACTION_TRANSITIONS, options.onTransition);
  }

  get state(): TransactionState {
    return this.machine.state;
  }

  /** A transaction (or at least once, a batch) is open: records are in it and not yet committed. */
  get open(): boolean {
    return this.machine.is(...PRODUCING);
  }

  transitionCounts(): TransitionCount[] {
    return this.machine.countRows();
  }

  /** Set from the output topics' limits (limitBatchBytes); undefined: librdkafka's batch.size. */
  private batchBytes: number | undefined;

  /** Caps the producer's batch.size (for the next client created) at `bytes`, unless it is already lower. */
  limitBatchBytes(bytes: number): void {
    const configured = Number(this.options.clientConfig['batch.size'] ?? DEFAULT_BATCH_SIZE);
    this.batchBytes = bytes < configured ? Math.max(1, Math.floor(bytes)) : undefined;
  }

  protected producerConfig(): RdConfig {
    return {
      ...this.options.clientConfig,
      ...(this.batchBytes === undefined ? {} : { 'batch.size': this.batchBytes }),
      'enable.idempotence': true,
      'linger.ms': 5,
      'partitioner': 'murmur2_random',
      'queue.buffering.max.messages': 2_000_000,
      'queue.buffering.max.kbytes': 1_048_576,
    };
  }

  /** Creates the client and readies it for transactions; throws (the client disconnected) when it cannot. */
  protected abstract createClient(): Promise<Producer>;
  protected abstract beginOnClient(client: Producer): Promise<void>;
  protected abstract commitOnClient(client: Producer, request: CommitRequest): Promise<CommitOutcome>;
  protected abstract abortOnClient(client: Producer): Promise<void>;

  async connect(): Promise<void> {
    this.machine.require('connect', ['UNINITIALIZED']);
    try {
      this.client = await this.createClient();
    } catch (e) {
      this.machine.to('CLOSED', 'connect');
      throw e;
    }
    this.machine.to('READY', 'connect');
  }

  async begin(): Promise<void> {
    const client = this.current('begin', ['READY']);
    this.dropBatches();
    this.outputRecords = 0;
    await this.beginOnClient(client);
    this.machine.to('IN_TRANSACTION', 'begin');
  }

  produce(topic: string, partition: number | null, value: Buffer | null, key: Buffer | null, timestamp: number, headers?: Record<string, Buffer | string>[]): void {
    // No opaque: the binding pins any opaque but undefined (null too) in a persistent handle that only a
    // delivery report frees, and onceflow asks for none: one leaked handle per record otherwise.
    this.current('produce', PRODUCING).produce(topic, partition, value, key, timestamp, undefined, headers);
  }

  /** A record for an output topic (a sink or a dead-letter topic), counted apart from internal records for the fault hook. */
  produceOutput(topic: string, partition: number | null, value: Buffer | null, key: Buffer | null, timestamp: number, headers: Record<string, Buffer | string>[]): void {
    this.produce(topic, partition, value, key, timestamp, headers);
    this.outputRecords++;
  }

  protected get phasePass(): PhasePass {
    return { outputRecords: this.outputRecords };
  }

  /**
   * A repartition record: batched with the others of its partition in this transaction, produced once
   * the batch is full or the transaction commits. Dropped with the transaction when it aborts.
   */
  produceBatched(topic: string, partition: number, record: BatchedRecord): void {
    this.machine.require('produce', PRODUCING);
    let writers = this.batches.get(topic);
    if (writers === undefined) this.batches.set(topic, (writers = []));
    const writer = (writers[partition] ??= new RecordBatchWriter());
    const size = RecordBatchWriter.sizeOf(record);
    if (writer.count > 0 && (writer.bytes + size > RECORD_BATCH_TARGET_BYTES || writer.count >= RECORD_BATCH_MAX_RECORDS)) this.produceBatch(topic, partition, writer);
    if (size <= RECORD_BATCH_TARGET_BYTES) {
      writer.add(record);
      return;
    }
    // Alone it would fill a batch: sent as a plain record, after what its partition had batched (order kept).
    const headers: Record<string, Buffer | string>[] = [];
    for (const h of record.headers ?? []) headers.push({ [h.key]: h.value });
    if (record.lineage !== undefined) headers.push({ [LINEAGE.header]: record.lineage });
    this.produce(topic, partition, record.value, record.key, record.timestamp, headers);
  }

  async commit(request: CommitRequest): Promise<CommitOutcome> {
    const client = this.current('commit', ['IN_TRANSACTION']);
    this.machine.to('COMMITTING', 'commit');
    return this.commitOnClient(client, {
      ...request,
      prepare: async () => {
        // What the tasks hold back may itself go to a repartition topic: batches go last.
        this.step('commit: prepare');
        await request.prepare();
        this.produceBatches();
      },
    });
  }

  private produceBatches(): void {
    for (const [topic, writers] of this.batches) {
      for (let partition = 0; partition < writers.length; partition++) {
        const writer = writers[partition];
        if (writer !== undefined && writer.count > 0) this.produceBatch(topic, partition, writer);
      }
    }
  }

  private produceBatch(topic: string, partition: number, writer: RecordBatchWriter): void {
    const timestamp = writer.firstTimestamp;
    this.produce(topic, partition, writer.take(), null, timestamp, BATCH_HEADERS);
  }

  /** The transaction's batched records go with it (aborted, failed, closed). */
  private dropBatches(): void {
    for (const writers of this.batches.values()) for (const writer of writers) writer?.take();
  }

  /** Undefined when the transaction was aborted; otherwise how the producer failed (it must then be replaced). */
  async abort(): Promise<TransactionFailure | undefined> {
    const client = this.current('abort', PRODUCING);
    this.dropBatches();
    this.machine.to('ABORTING', 'abort');
    try {
      await this.abortOnClient(client);
    } catch (e) {
      // The transaction may have been committing when it failed (EndTxn's outcome unknown): whether
      // it landed is read back, never assumed (rule 5 in partition-progress.ts).
      this.machine.to(isFatalOrFencing(e) ? 'FENCED' : 'COMMIT_UNKNOWN', 'abort');
      return { kind: 'replace', error: e };
    }
    this.machine.to('READY', 'abort');
    return undefined;
  }

  /** A call on this producer (or a produce inside a task) failed with `e`: what now, and the state that goes with it. */
  failed(e: unknown): TransactionFailure {
    this.dropBatches();
    if (classifyTxnError(e) === 'abortable') return { kind: 'abortable', error: e };
    const next = isFatalOrFencing(e) ? 'FENCED' : 'COMMIT_UNKNOWN';
    // Once fenced, a later failure of the same client is still the fencing.
    if (!this.machine.is(next, 'FENCED')) this.machine.to(next, 'failed');
    return { kind: 'replace', error: e };
  }

  /** Disconnects the failed client (or leaves it to its stuck call, setAsideUntil) and readies a new one. */
  async replace(): Promise<void> {
    this.machine.require('replace', ['FENCED', 'COMMIT_UNKNOWN']);
    const old = this.client;
    this.client = undefined;
    this.step('replace: disconnect');
    if (old) await this.disconnectUnlessSetAside(old);
    this.machine.to('UNINITIALIZED', 'replace');
    this.step('replace: new producer');
    await this.connect();
  }

  async close(): Promise<void> {
    this.dropBatches();
    const client = this.client;
    this.client = undefined;
    if (client) await this.disconnectUnlessSetAside(client);
    if (this.machine.state !== 'CLOSED') this.machine.to('CLOSED', 'close');
  }

  /** Clients with a call in flight that outlived its timeout: destroying one would pull it from under that call. */
  private readonly setAside = new Map<Producer, Promise<unknown>>();

  /** `client` is not to be disconnected before `call` returns (exactly-once.ts, sendOffsetsWithin). */
  protected setAsideUntil(client: Producer, call: Promise<unknown>): void {
    this.setAside.set(client, call);
  }

  private async disconnectUnlessSetAside(client: Producer): Promise<void> {
    const call = this.setAside.get(client);
    if (call === undefined) {
      await disconnect(client, 5000);
      return;
    }
    this.setAside.delete(client);
    void call.catch(() => undefined).then(() => disconnect(client, 5000));
  }

  protected step(name: string): void {
    this.options.onStep?.(name);
  }

  private current(call: string, allowed: readonly TransactionState[]): Producer {
    this.machine.require(call, allowed);
    // Every state that allows a call has a client: connect() sets it before READY.
    return this.client as Producer;
  }
}
