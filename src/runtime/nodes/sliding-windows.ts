// Sliding-window aggregates (Kafka Streams' KStreamSlidingWindowAggregate, KIP-450). A key's windows
// are those of its records: `[t - d, t]` ending at each record, and `[t + 1, t + 1 + d]` starting just
// after a record with a later one within d. A record updates the open windows that contain it and
// creates its own; a new window starts from the aggregate of an existing one holding exactly the same
// other records, so no record is kept and none is aggregated twice.
import type { Windowed } from '../../core/windowed.ts';
import type { WindowSpec } from '../../dsl/types.ts';
import { windowCloseTime } from '../../dsl/sliding-windows.ts';
import type { Serde } from '../../serdes/serde.ts';
import { DeadlineHeap } from '../../state/heap.ts';
import { mapKey } from '../../state/store.ts';
import { splitWindowStoreKey, windowStoreKey } from '../../state/windowed.ts';
import { slidingWindowValue, splitSlidingWindowValue } from '../../state/sliding-window.ts';
import { WindowsByKey } from '../../state/windows-by-key.ts';
import { errorCode } from '../../core/stage-errors.ts';
import { StageFailure } from './node-errors.ts';
import { dropLateRecord, StatefulNode } from './stateful.ts';
import type { Spec } from './runtime-node.ts';
import type { Step } from './step.ts';

interface SlidingWindow {
  readonly start: number;
  latestRecordMs: number;
  readonly storeKey: Buffer;
}

interface WindowWrite {
  readonly window: SlidingWindow;
  readonly fresh: boolean;
  readonly aggregate: unknown;
}

export class SlidingWindowAggregateNode extends StatefulNode {
  readonly #spec = this.node.spec as Spec<'aggregate'>;
  /** The aggregate's own serde: the store's (sliding-window-value) appends the window's latest record time. */
  readonly #state: Serde<unknown> = this.#spec.stateSerde!;
  readonly #w: WindowSpec = this.storeSpec.window!;
  /** Windows per key (latin1 of its bytes), closed ones included until they expire. */
  readonly #byKey = new WindowsByKey<SlidingWindow>();
  /** A closed window stays while a record that is not late may still start a new window from its aggregate. */
  readonly #expiring = new DeadlineHeap<Buffer>();
  /** With emitFinal: when each window closes and its final result goes downstream. */
  readonly #closing = new DeadlineHeap<Buffer>();

  protected override rebuildIndex(): void {
    this.#byKey.clear();
    this.#expiring.clear();
    this.#closing.clear();
    for (const [storeKey, bytes] of this.store.entries()) {
      const { inner, start } = splitWindowStoreKey(storeKey);
      const { latestRecordMs, closed } = splitSlidingWindowValue(bytes);
      this.#add(mapKey(inner), { start, latestRecordMs, storeKey }, !closed);
    }
  }

  #add(key: string, window: SlidingWindow, open: boolean): void {
    this.#byKey.add(key, window);
    // A record at t, not late, starts windows from ones starting at t - 2d - 1 or later: see apply.
    this.#expiring.push(window.start + 2 * this.#w.sizeMs + this.#w.graceMs + 2, window.storeKey);
    if (open && this.#w.emitFinal) this.#closing.push(this.#closeTime(window.start), window.storeKey);
  }

  #closeTime(start: number): number {
    return windowCloseTime(start + this.#w.sizeMs, this.#w);
  }

  #aggregateOf(window: SlidingWindow): unknown {
    return this.storeSpec.valueSerde.deserialize(this.store.get(window.storeKey)!, this.valueCtx);
  }

  protected apply(key: unknown, value: unknown): Step {
    if (this.dropsNullKey(key)) return;
    this.ensureIndexed();
    const t = this.task.timestamp;
    const d = this.#w.sizeMs;
    const now = this.task.streamTime;
    const open = (start: number): boolean => this.#closeTime(start) > now;
    // the last window a record can belong to is [t, t + d]
    if (!open(t)) {
      dropLateRecord(this, t + d + this.#w.graceMs, this.#w.lateRecords);
      return;
    }
    const kb = this.keyBytes(key);
    const mk = mapKey(kb);
    const windows = this.#byKey.of(mk);
    let previousRecordMs: number | undefined;
    /** The latest-starting window ending before t: when the record before t is within d, it holds exactly the records of [t - d, t). */
    let leftSource: SlidingWindow | undefined;
    /** The latest-starting window around t: when it has records after t, they are exactly those of (t, t + 1 + d]. */
    let rightSource: SlidingWindow | undefined;
    const containing: SlidingWindow[] = [];
    const starts = new Set<number>();
    for (const w of windows) {
      starts.add(w.start);
      if (w.latestRecordMs < t && (previousRecordMs === undefined || w.latestRecordMs > previousRecordMs)) previousRecordMs = w.latestRecordMs;
      if (w.start + d < t) {
        if (leftSource === undefined || w.start > leftSource.start) leftSource = w;
      } else if (w.start <= t) {
        containing.push(w);
        if (w.start + d > t && (rightSource === undefined || w.start > rightSource.start)) rightSource = w;
      }
    }
    const { init, fn } = this.#spec;
    // Everything is computed before anything is written, so a throwing aggregator leaves nothing half-done for the retry.
    const rightAggregate = rightSource !== undefined && rightSource.latestRecordMs > t ? this.#aggregateOf(rightSource) : undefined;
    const writes: WindowWrite[] = [];
    containing.sort((a, b) => a.start - b.start);
    for (const w of containing) {
      if (open(w.start)) writes.push({ window: w, fresh: false, aggregate: this.checkSync(fn(key, value, this.#aggregateOf(w))) });
    }
    const fresh = (start: number, latestRecordMs: number, aggregate: unknown): void => {
      starts.add(start);
      writes.push({ window: { start, latestRecordMs, storeKey: windowStoreKey(kb, start) }, fresh: true, aggregate });
    };
    // The previous record's right window, which had no record until this one.
    if (previousRecordMs !== undefined && previousRecordMs + 1 + d >= t && !starts.has(previousRecordMs + 1) && previousRecordMs + 1 !== t - d && open(previousRecordMs + 1)) {
      fresh(previousRecordMs + 1, t, this.checkSync(fn(key, value, init())));
    }
    if (!starts.has(t - d) && open(t - d)) {
      const before = previousRecordMs !== undefined && previousRecordMs >= t - d && leftSource !== undefined ? this.#aggregateOf(leftSource) : init();
      fresh(t - d, t, this.checkSync(fn(key, value, before)));
    }
    if (rightSource !== undefined && rightAggregate !== undefined && !starts.has(t + 1)) fresh(t + 1, rightSource.latestRecordMs, rightAggregate);
    // Its own window closed and no open one holds it: the record would count nowhere.
    if (writes.length === 0) {
      dropLateRecord(this, t + this.#w.graceMs, this.#w.lateRecords);
      return;
    }
    const pairs: [Windowed<unknown>, unknown][] = [];
    for (const { window, fresh: isNew, aggregate } of writes) {
      if (!isNew) window.latestRecordMs = Math.max(window.latestRecordMs, t);
      const bytes = this.#state.serialize(aggregate, this.valueCtx) ?? Buffer.alloc(0);
      this.store.put(window.storeKey, slidingWindowValue(bytes, window.latestRecordMs, false), t);
      if (isNew) this.#add(mk, window, true);
      if (!this.#w.emitFinal) pairs.push([{ key, start: window.start, end: window.start + d }, aggregate]);
    }
    return pairs.length === 0 ? undefined : this.forwardPairs(pairs, 0);
  }

  /** With emitFinal, closed windows are emitted (and marked so); expired ones leave the store. */
  override fireStreamTime(): Step {
    let pairs: [Windowed<unknown>, unknown][] | undefined;
    try {
      this.ensureIndexed();
      const now = this.task.streamTime;
      for (let e = this.#closing.popDue(now); e !== undefined; e = this.#closing.popDue(now)) {
        const stored = this.store.get(e.item);
        if (stored === undefined) continue;
        const held = splitSlidingWindowValue(stored);
        if (held.closed) continue;
        const { inner, start } = splitWindowStoreKey(e.item);
        (pairs ??= []).push([{ key: this.storeSpec.keySerde.deserialize(inner, this.keyCtx), start, end: start + this.#w.sizeMs }, this.storeSpec.valueSerde.deserialize(stored, this.valueCtx)]);
        this.store.put(e.item, slidingWindowValue(held.aggregate, held.latestRecordMs, true), now);
      }
      for (let e = this.#expiring.popDue(now); e !== undefined; e = this.#expiring.popDue(now)) {
        if (this.store.get(e.item) === undefined) continue;
        this.store.delete(e.item, now);
        this.#byKey.remove(mapKey(splitWindowStoreKey(e.item).inner), e.item);
      }
    } catch (e) {
      throw new StageFailure(this.name, e, 1, errorCode(e, 'WINDOW_CLOSE_FAILED'));
    }
    return pairs === undefined ? undefined : this.forwardPairs(pairs, 0);
  }
}
