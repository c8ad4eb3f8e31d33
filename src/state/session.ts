/**
 * Session store keys: `<inner key bytes><start: int64 BE><end: int64 BE>`, the layout windowedSerde
 * gives `Windowed<K>`, so a session's store key and its output key are the same bytes.
 */
export function sessionStoreKey(inner: Buffer, start: number, end: number): Buffer {
  const out = Buffer.allocUnsafe(inner.length + 16);
  inner.copy(out, 0);
  out.writeBigInt64BE(BigInt(start), inner.length);
  out.writeBigInt64BE(BigInt(end), inner.length + 8);
  return out;
}

export function splitSessionStoreKey(storeKey: Buffer): { inner: Buffer; start: number; end: number } {
  const at = storeKey.length - 16;
  return { inner: storeKey.subarray(0, at), start: Number(storeKey.readBigInt64BE(at)), end: Number(storeKey.readBigInt64BE(at + 8)) };
}
