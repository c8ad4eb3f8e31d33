import type { KafkaConsumer, Producer, TopicPartitionOffset } from '@confluentinc/kafka-javascript';
import { disconnect, type RdConfig } from '../../kafka/clients.ts';
import type { ClientSupplier } from '../client-supplier.ts';
import type { FaultHook } from '../faults.ts';
import { StateMachine, type TransitionCount, type TransitionHook } from '../state-machine.ts';
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

/** librdkafka's default batch.size. */
const DEFAULT_BATCH_SIZE = 1_000_000;

/**
 * The worker's producer under one guarantee: the states of states.ts, guarded, over whichever
 * librdkafka producer is current (a replaced one is disconnected and a new one created).
 */
export abstract class TransactionalOutput {
  protected readonly machine: StateMachine<TransactionState>;
  protected client: Producer | undefined;

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
    await this.beginOnClient(client);
    this.machine.to('IN_TRANSACTION', 'begin');
  }

  produce(topic: string, partition: number | null, value: Buffer | null, key: Buffer | null, timestamp: number, headers?: Record<string, Buffer | string>[]): void {
    this.current('produce', PRODUCING).produce(topic, partition, value, key, timestamp, null, headers);
  }

  async commit(request: CommitRequest): Promise<CommitOutcome> {
    const client = this.current('commit', ['IN_TRANSACTION']);
    this.machine.to('COMMITTING', 'commit');
    return this.commitOnClient(client, request);
  }

  /** Undefined when the transaction was aborted; otherwise how the producer failed (it must then be replaced). */
  async abort(): Promise<TransactionFailure | undefined> {
    const client = this.current('abort', PRODUCING);
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
    if (classifyTxnError(e) === 'abortable') return { kind: 'abortable', error: e };
    const next = isFatalOrFencing(e) ? 'FENCED' : 'COMMIT_UNKNOWN';
    // Once fenced, a later failure of the same client is still the fencing.
    if (!this.machine.is(next, 'FENCED')) this.machine.to(next, 'failed');
    return { kind: 'replace', error: e };
  }

  /** Disconnects the failed client and readies a new one. */
  async replace(): Promise<void> {
    this.machine.require('replace', ['FENCED', 'COMMIT_UNKNOWN']);
    const old = this.client;
    this.client = undefined;
    if (old) await disconnect(old, 5000);
    this.machine.to('UNINITIALIZED', 'replace');
    await this.connect();
  }

  async close(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) await disconnect(client, 5000);
    if (this.machine.state !== 'CLOSED') this.machine.to('CLOSED', 'close');
  }

  private current(call: string, allowed: readonly TransactionState[]): Producer {
    this.machine.require(call, allowed);
    // Every state that allows a call has a client: connect() sets it before READY.
    return this.client as Producer;
  }
}
