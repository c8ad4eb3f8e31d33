import type { Serde, SerdeContext } from '../serdes/serde.ts';

/**
 * Values of a sliding window store: `<aggregate bytes><latest record time in the window: int64 BE>
 * <1: closed and emitted | 0>`. The sliding aggregate needs the time of the latest record each window
 * holds to find the windows a new record creates (Kafka Streams keeps it as ValueAndTimestamp), and
 * keeps closed windows a while as the starting aggregates of new ones, so it marks a window whose
 * final result it emitted. Readers (interactive queries, the test driver's store views) see the
 * aggregate only.
 */
const TRAILER_BYTES = 9;

export interface SlidingWindowValue {
  readonly aggregate: Buffer;
  readonly latestRecordMs: number;
  readonly closed: boolean;
}

export function slidingWindowValue(aggregate: Buffer, latestRecordMs: number, closed: boolean): Buffer {
  const out = Buffer.allocUnsafe(aggregate.length + TRAILER_BYTES);
  aggregate.copy(out, 0);
  out.writeBigInt64BE(BigInt(latestRecordMs), aggregate.length);
  out.writeUInt8(closed ? 1 : 0, aggregate.length + 8);
  return out;
}

export function splitSlidingWindowValue(bytes: Buffer): SlidingWindowValue {
  const at = bytes.length - TRAILER_BYTES;
  return { aggregate: bytes.subarray(0, at), latestRecordMs: Number(bytes.readBigInt64BE(at)), closed: bytes.readUInt8(at + 8) === 1 };
}

const cache = new WeakMap<Serde<unknown>, Serde<unknown>>();

/**
 * The store's value serde as readers use it: decodes the aggregate. Encoding is the sliding
 * aggregate's own (slidingWindowValue, with the window's latest record time); a value encoded here
 * says 0 for that time.
 */
export function slidingWindowValueSerde(aggregate: Serde<unknown>): Serde<unknown> {
  const hit = cache.get(aggregate);
  if (hit) return hit;
  const serde: Serde<unknown> = {
    name: `sliding-window-value(${aggregate.name})`,
    ...(aggregate.schemaHash === undefined ? {} : { schemaHash: aggregate.schemaHash }),
    serialize(value: unknown, ctx: SerdeContext): Buffer | null {
      const bytes = aggregate.serialize(value, ctx);
      return bytes === null ? null : slidingWindowValue(bytes, 0, false);
    },
    deserialize(data: Buffer | null, ctx: SerdeContext): unknown {
      return aggregate.deserialize(data === null ? null : splitSlidingWindowValue(data).aggregate, ctx);
    },
    ...(aggregate.prepare ? { prepare: aggregate.prepare.bind(aggregate) } : {}),
  };
  cache.set(aggregate, serde);
  return serde;
}
