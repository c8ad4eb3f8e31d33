import type { Serde } from '../serdes/serde.ts';

/**
 * Numbers as UTF-8 decimal text, so `count()` output reads as JSON and the changelog stays
 * human-readable. Used for counts, versions and dedupe timestamps.
 */
export const countSerde: Serde<number> = {
  name: 'number',
  // A deleted count (a merged-away session, a deleted row) is a tombstone: null both ways.
  serialize: (value) => (value === null ? null : Buffer.from(String(value), 'utf8')),
  deserialize: (data) => (data === null ? (null as never) : Number(data.toString('utf8'))),
};
