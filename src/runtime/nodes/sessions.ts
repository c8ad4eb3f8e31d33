// Session-windowed aggregates (Kafka Streams' KStreamSessionWindowAggregate): a record joins, or
// bridges and merges, the sessions of its key within the inactivity gap. Merged-away sessions leave
// the store (a tombstone in the changelog, in the transaction) and go downstream as null values.
import type { Windowed } from '../../core/windowed.ts';
import { sessionCloseTime, type SessionWindowSpec } from '../../dsl/session-windows.ts';
import { DeadlineHeap } from '../../state/heap.ts';
import { mapKey } from '../../state/store.ts';
import { sessionStoreKey, splitSessionStoreKey } from '../../state/session.ts';
import { WindowsByKey } from '../../state/windows-by-key.ts';
import { dropLateRecord, StatefulNode } from './stateful.ts';
import type { Spec } from './runtime-node.ts';
import type { Step } from './step.ts';

interface Session {
  readonly start: number;
  readonly end: number;
  readonly storeKey: Buffer;
}

export class SessionAggregateNode extends StatefulNode {
  readonly #spec = this.node.spec as Spec<'aggregate'>;
  readonly #w: SessionWindowSpec = (this.node.spec as Spec<'aggregate'>).session!;
  readonly #merge = (this.node.spec as Spec<'aggregate'>).merger!;
  /** Open sessions per key (latin1 of its bytes), rebuilt from the store after a rollback or a failed record. */
  readonly #byKey = new WindowsByKey<Session>();
  readonly #closing = new DeadlineHeap<Buffer>();

  protected override rebuildIndex(): void {
    this.#byKey.clear();
    this.#closing.clear();
    for (const [k] of this.store.entries()) {
      const { inner, start, end } = splitSessionStoreKey(k);
      this.#add(mapKey(inner), { start, end, storeKey: k });
    }
  }

  #add(key: string, session: Session): void {
    this.#byKey.add(key, session);
    this.#closing.push(sessionCloseTime(session.end, this.#w), session.storeKey);
  }

  #remove(key: string, storeKey: Buffer): void {
    this.#byKey.remove(key, storeKey);
  }

  #decode(bytes: Buffer): unknown {
    return this.storeSpec.valueSerde.deserialize(bytes, this.valueCtx);
  }

  protected apply(key: unknown, value: unknown): Step {
    if (this.dropsNullKey(key)) return;
    this.ensureIndexed();
    const t = this.task.timestamp;
    const { inactivityGapMs: gap, graceMs } = this.#w;
    if (t + graceMs < this.task.streamTime) {
      dropLateRecord(this, t + graceMs, this.#w.lateRecords);
      return;
    }
    const kb = this.keyBytes(key);
    const mk = mapKey(kb);
    const merged = this.#byKey.of(mk).filter((s) => s.start - gap <= t && t <= s.end + gap);
    let start = t;
    let end = t;
    // merge first, then add the record, as Kafka Streams does; all computed before any write, so a throwing function leaves nothing half-done
    let agg = this.#spec.init();
    for (const s of merged) {
      start = Math.min(start, s.start);
      end = Math.max(end, s.end);
      agg = this.checkSync(this.#merge(key, agg, this.#decode(this.store.get(s.storeKey)!)));
    }
    agg = this.checkSync(this.#spec.fn(key, value, agg));
    const bytes = this.storeSpec.valueSerde.serialize(agg, this.valueCtx);
    const storeKey = sessionStoreKey(kb, start, end);
    const pairs: [Windowed<unknown>, unknown][] = [];
    for (const s of merged) {
      if (s.start === start && s.end === end) continue;
      this.store.delete(s.storeKey, t);
      this.#remove(mk, s.storeKey);
      if (!this.#w.emitFinal) pairs.push([{ key, start: s.start, end: s.end }, null]);
    }
    const unchanged = merged.some((s) => s.start === start && s.end === end);
    if (bytes === null) {
      this.store.delete(storeKey, t);
      if (unchanged) this.#remove(mk, storeKey);
    } else {
      this.store.put(storeKey, bytes, t);
      if (!unchanged) this.#add(mk, { start, end, storeKey });
    }
    if (!this.#w.emitFinal) pairs.push([{ key, start, end }, bytes === null ? null : agg]);
    return pairs.length === 0 ? undefined : this.forwardPairs(pairs, 0);
  }

  /** Closed sessions leave the store (nothing can change them any more); with emitFinal they are emitted now. */
  override fireStreamTime(): Step {
    return this.closeDue(
      () => this.ensureIndexed(),
      this.#closing,
      this.#w.emitFinal,
      (storeKey) => {
        const { inner, start, end } = splitSessionStoreKey(storeKey);
        return { key: this.storeSpec.keySerde.deserialize(inner, this.keyCtx), start, end };
      },
      (storeKey) => this.#remove(mapKey(splitSessionStoreKey(storeKey).inner), storeKey),
    );
  }
}
