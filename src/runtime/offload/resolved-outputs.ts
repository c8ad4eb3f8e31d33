import { nextLineage } from '../../core/headers.ts';
import type { CommitCollector, IncomingRecord, OutgoingRecord, RecordCollector, RecordOrigin } from '../../core/records.ts';
import type { OriginRecord } from '../transaction/record-collector.ts';
import { IllegalTransitionError } from '../base/errors.ts';
import { forEachOutput, packOutputs, type PackedOutputs } from './record-transfer.ts';

/**
 * What a task hosted on a processing thread emits, as it crosses back to the main thread: each output
 * with its lineage already numbered there (nextLineage, as the worker's collector numbers it) and the
 * input record it stands for, which may be one of an earlier batch (a cached result released at the
 * commit). The main thread puts them into the transaction as they are (WorkerRecordCollector.sendResolved).
 */
export interface PackedResolved {
  /** The records; each one's input index points into `origins` and `lineages` is parallel to them. */
  readonly records: PackedOutputs;
  readonly lineages: readonly string[];
  readonly origins: readonly OriginRecord[];
  /** Changelog records: they stand for no input record and carry no lineage. */
  readonly changelogs: PackedOutputs;
}

/** The buffers a packed answer transfers (not copies) to the other thread. */
export function transferablesOf(packed: PackedResolved): ArrayBuffer[] {
  return [packed.records.bytes, packed.records.fields.buffer as ArrayBuffer, packed.changelogs.bytes, packed.changelogs.fields.buffer as ArrayBuffer];
}

export interface ResolvedSink {
  sendResolved(record: OutgoingRecord, lineage: string, origin: OriginRecord): void;
  changelog(record: OutgoingRecord): void;
}

/** Hands every record of `packed` to `sink`, in the order the task sent them: outputs first, then changelog records. */
export function applyResolved(packed: PackedResolved, sink: ResolvedSink): void {
  let index = 0;
  forEachOutput(packed.records, (record, origin) => sink.sendResolved(record, packed.lineages[index++]!, packed.origins[origin]!));
  forEachOutput(packed.changelogs, (record) => sink.changelog(record));
}

/**
 * The collector a hosted task sends to, on its thread: it numbers each output's lineage from its origin
 * and keeps it for the answer. One origin per input record; a released result brings its own.
 */
export class ResolvingCollector implements CommitCollector {
  #records: OutgoingRecord[] = [];
  #lineages: string[] = [];
  #originIndex: number[] = [];
  #origins: OriginRecord[] = [];
  #changelogs: OutgoingRecord[] = [];
  readonly #indexOf = new Map<IncomingRecord, number>();
  #aimed: RecordOrigin | undefined;

  /** Where the outputs of `record`'s processing go, unless they come with an origin of their own. */
  aim(record: IncomingRecord): RecordCollector {
    this.#aimed = { record, released: false, seq: 0, lineagePrefix: undefined };
    return this;
  }

  send(record: OutgoingRecord, origin?: RecordOrigin): void {
    const from = origin ?? this.#aimed;
    if (from === undefined) throw new IllegalTransitionError('hosted task collector', 'IDLE', 'send', undefined, 'an output came with no input record behind it');
    this.#records.push(record);
    this.#lineages.push(nextLineage(from));
    this.#originIndex.push(this.#origin(from.record));
  }

  readonly changelog = (record: OutgoingRecord): void => {
    this.#changelogs.push(record);
  };

  /** Everything sent since the last call, packed, and forgotten here. */
  take(): PackedResolved {
    const packed = { records: packOutputs(this.#records, this.#originIndex), lineages: this.#lineages, origins: this.#origins, changelogs: packOutputs(this.#changelogs, this.#changelogs.map(() => 0)) };
    this.#records = [];
    this.#lineages = [];
    this.#originIndex = [];
    this.#origins = [];
    this.#changelogs = [];
    this.#indexOf.clear();
    this.#aimed = undefined;
    return packed;
  }

  #origin(record: IncomingRecord): number {
    let index = this.#indexOf.get(record);
    if (index === undefined) {
      index = this.#origins.push({ topic: record.topic, partition: record.partition, offset: record.offset, timestamp: record.timestamp }) - 1;
      this.#indexOf.set(record, index);
    }
    return index;
  }
}
