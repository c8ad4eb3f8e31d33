// Suppression (Kafka Streams' KTableSuppressProcessor): updates of a table wait in a buffer store,
// changelogged in the transaction like every store, until their window closes or their time limit
// passes; so a crash neither loses nor repeats what was held back.
import type { Windowed } from '../../core/windowed.ts';
import { sessionCloseTime } from '../../dsl/session-windows.ts';
import { windowCloseTime } from '../../dsl/sliding-windows.ts';
import type { SuppressSpec } from '../../dsl/suppress.ts';
import { DeadlineHeap } from '../../state/heap.ts';
import { StatefulNode } from './stateful.ts';
import { StageFailure, SuppressionBufferFullError } from './node-errors.ts';
import type { NodeFactories } from './node-factory.ts';
import { errorCode } from '../../core/stage-errors.ts';
import type { Spec } from './runtime-node.ts';
import type { Step } from './step.ts';

/** Buffer values: `<due: int64 BE><1: a value follows | 0: a delete><value bytes>`. */
const HEADER_BYTES = 9;

function encodeHeld(due: number, value: Buffer | null): Buffer {
  const out = Buffer.allocUnsafe(HEADER_BYTES + (value?.length ?? 0));
  out.writeBigInt64BE(BigInt(due), 0);
  out.writeUInt8(value === null ? 0 : 1, 8);
  value?.copy(out, HEADER_BYTES);
  return out;
}

function decodeHeld(bytes: Buffer): { due: number; value: Buffer | null } {
  return { due: Number(bytes.readBigInt64BE(0)), value: bytes.readUInt8(8) === 0 ? null : bytes.subarray(HEADER_BYTES) };
}

/** The update a buffer value holds back (null: a delete). */
export function heldValue(bytes: Buffer): Buffer | null {
  return decodeHeld(bytes).value;
}

export class SuppressNode extends StatefulNode {
  readonly #spec = this.node.spec as Spec<'suppress'>;
  readonly #s: SuppressSpec = (this.node.spec as Spec<'suppress'>).suppress;
  readonly #due = new DeadlineHeap<Buffer>();
  #held = 0;
  #bytes = 0;
  #indexed = false;

  override reset(): void {
    this.#indexed = false;
  }

  #index(): void {
    if (this.#indexed) return;
    this.#due.clear();
    this.#held = 0;
    this.#bytes = 0;
    for (const [k, v] of this.store.entries()) {
      this.#due.push(decodeHeld(v).due, k);
      this.#held++;
      this.#bytes += k.length + v.length;
    }
    this.#indexed = true;
  }

  /** When an update of `key` (first held back at `timestamp`) may go. */
  #dueOf(key: unknown): number {
    if (this.#s.until === 'time-limit') return this.task.timestamp + this.#s.timeLimitMs;
    const w = this.#spec.window!;
    const end = (key as Windowed<unknown>).end;
    return w.type === 'session' ? sessionCloseTime(end, w) : windowCloseTime(end, w);
  }

  protected apply(key: unknown, value: unknown): Step {
    this.#index();
    const kb = this.keyBytes(key);
    const prev = this.store.get(kb);
    // Final results never show a window that was merged away or deleted: it was never emitted.
    if (value === null && this.#s.until === 'window-closes') {
      if (prev !== undefined) this.#drop(kb, prev);
      return;
    }
    const due = prev === undefined ? this.#dueOf(key) : decodeHeld(prev).due;
    if (due <= this.task.streamTime) {
      if (prev !== undefined) this.#drop(kb, prev);
      return this.forward(key, value);
    }
    const held = encodeHeld(due, value === null ? null : this.storeSpec.valueSerde.serialize(value, this.valueCtx));
    const growth = kb.length + held.length - (prev === undefined ? 0 : kb.length + prev.length);
    let early: [unknown, unknown] | undefined;
    if (prev === undefined && (this.#held + 1 > this.#s.maxRecords || this.#bytes + growth > this.#s.maxBytes)) {
      if (this.#s.whenFull === 'error') {
        const e = new SuppressionBufferFullError(this.name, this.#held, this.#bytes, this.#s.maxRecords, this.#s.maxBytes);
        throw new StageFailure(this.name, e, 1, e.code);
      }
      early = this.#takeFirstDue();
    }
    this.store.put(kb, held, this.task.timestamp);
    if (prev === undefined) {
      this.#due.push(due, kb);
      this.#held++;
    }
    this.#bytes += growth;
    return early === undefined ? undefined : this.forward(early[0], early[1]);
  }

  #drop(kb: Buffer, held: Buffer): void {
    this.store.delete(kb, this.task.timestamp);
    this.#held--;
    this.#bytes -= kb.length + held.length;
  }

  /** The held-back update due first, taken out of the buffer; its heap entry goes stale and is skipped. */
  #takeFirstDue(): [unknown, unknown] | undefined {
    for (let e = this.#due.popDue(Number.POSITIVE_INFINITY); e !== undefined; e = this.#due.popDue(Number.POSITIVE_INFINITY)) {
      const held = this.store.get(e.item);
      if (held === undefined || decodeHeld(held).due !== e.at) continue;
      return this.#release(e.item, held);
    }
    return undefined;
  }

  #release(kb: Buffer, held: Buffer): [unknown, unknown] {
    this.#drop(kb, held);
    const { value } = decodeHeld(held);
    return [this.storeSpec.keySerde.deserialize(kb, this.keyCtx), value === null ? null : this.storeSpec.valueSerde.deserialize(value, this.valueCtx)];
  }

  override fireStreamTime(): Step {
    let pairs: [unknown, unknown][] | undefined;
    try {
      this.#index();
      const now = this.task.streamTime;
      for (let e = this.#due.popDue(now); e !== undefined; e = this.#due.popDue(now)) {
        const held = this.store.get(e.item);
        if (held === undefined || decodeHeld(held).due !== e.at) continue;
        (pairs ??= []).push(this.#release(e.item, held));
      }
    } catch (e) {
      throw new StageFailure(this.name, e, 1, errorCode(e, 'SUPPRESSION_RELEASE_FAILED'));
    }
    return pairs === undefined ? undefined : this.forwardPairs(pairs, 0);
  }
}

export const SUPPRESS_NODES = {
  suppress: ({ task, node, storeOf }) => {
    const s = storeOf(node.stores[0]!);
    const n = new SuppressNode(task, node, s.store, s.spec);
    task.timeListeners.push(n);
    return n;
  },
} satisfies NodeFactories;
