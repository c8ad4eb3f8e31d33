import type { Serde, SerdeContext } from '../serdes/serde.ts';
import type { Windowed } from '../core/windowed.ts';

/**
 * Byte layouts of windowed keys.
 *
 * Store and changelog key: `<inner key bytes><window start: int64 big-endian>`. The end is not stored
 * because the window size is fixed per store.
 *
 * Output key (windowedSerde): `<inner key bytes><start: int64 BE><end: int64 BE>`, so a consumer can
 * decode it without knowing the window size.
 */
export function windowStoreKey(inner: Buffer, start: number): Buffer {
  const out = Buffer.allocUnsafe(inner.length + 8);
  inner.copy(out, 0);
  out.writeBigInt64BE(BigInt(start), inner.length);
  return out;
}

export function splitWindowStoreKey(storeKey: Buffer): { inner: Buffer; start: number } {
  const at = storeKey.length - 8;
  return { inner: storeKey.subarray(0, at), start: Number(storeKey.readBigInt64BE(at)) };
}

const cache = new WeakMap<Serde<unknown>, Serde<Windowed<unknown>>>();

/** The serde of `Windowed<K>` keys on output topics; the same instance for the same inner serde. */
export function windowedSerde<K>(inner: Serde<K>): Serde<Windowed<K>> {
  const hit = cache.get(inner as Serde<unknown>);
  if (hit) return hit as Serde<Windowed<K>>;
  const serde: Serde<Windowed<K>> = {
    name: `windowed(${inner.name})`,
    serialize(value: Windowed<K>, ctx: SerdeContext): Buffer | null {
      const k = inner.serialize(value.key, ctx) ?? Buffer.alloc(0);
      const out = Buffer.allocUnsafe(k.length + 16);
      k.copy(out, 0);
      out.writeBigInt64BE(BigInt(value.start), k.length);
      out.writeBigInt64BE(BigInt(value.end), k.length + 8);
      return out;
    },
    deserialize(data: Buffer | null, ctx: SerdeContext): Windowed<K> {
      if (data === null || data.length < 16) throw new RangeError(`a windowed key needs at least 16 bytes, got ${data === null ? 'null' : data.length}`);
      const at = data.length - 16;
      return { key: inner.deserialize(data.subarray(0, at), ctx), start: Number(data.readBigInt64BE(at)), end: Number(data.readBigInt64BE(at + 8)) };
    },
    ...(inner.prepare ? { prepare: inner.prepare.bind(inner) } : {}),
  };
  cache.set(inner as Serde<unknown>, serde as Serde<Windowed<unknown>>);
  return serde;
}

/** Starts of every window of `size`/`advance` containing `t` (windows start at multiples of advance, from 0). */
export function windowStartsFor(t: number, sizeMs: number, advanceMs: number, out: number[]): number[] {
  out.length = 0;
  const last = Math.floor(t / advanceMs) * advanceMs;
  for (let s = last; s > t - sizeMs && s >= 0; s -= advanceMs) out.push(s);
  out.reverse();
  return out;
}
