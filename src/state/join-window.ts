/**
 * Byte layouts of a stream-stream join's window stores.
 *
 * Key: `<key bytes><timestamp: int64 BE><input offset: int64 BE><n: int32 BE>`: one entry per record,
 * the same on every replay of it (`n` numbers the records one input fans out into).
 *
 * Value: `<flags: 1 byte><value bytes>`; flag 1: the record has been joined (a left or outer join
 * then emits no unmatched result for it), flag 2: the value is null.
 */
const MATCHED = 1;
const NULL_VALUE = 2;
const SUFFIX = 20;

export function joinRecordKey(inner: Buffer, timestamp: number, offset: number, n: number): Buffer {
  const out = Buffer.allocUnsafe(inner.length + SUFFIX);
  inner.copy(out, 0);
  out.writeBigInt64BE(BigInt(timestamp), inner.length);
  out.writeBigInt64BE(BigInt(offset), inner.length + 8);
  out.writeInt32BE(n, inner.length + 16);
  return out;
}

export function splitJoinRecordKey(key: Buffer): { inner: Buffer; timestamp: number } {
  const at = key.length - SUFFIX;
  return { inner: key.subarray(0, at), timestamp: Number(key.readBigInt64BE(at)) };
}

export function joinRecordValue(matched: boolean, value: Buffer | null): Buffer {
  const flags = (matched ? MATCHED : 0) | (value === null ? NULL_VALUE : 0);
  return value === null ? Buffer.from([flags]) : Buffer.concat([Buffer.from([flags]), value]);
}

export function splitJoinRecordValue(bytes: Buffer): { matched: boolean; value: Buffer | null } {
  const flags = bytes[0] ?? 0;
  return { matched: (flags & MATCHED) !== 0, value: (flags & NULL_VALUE) !== 0 ? null : bytes.subarray(1) };
}
