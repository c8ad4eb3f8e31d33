import type { Serde } from './serde.ts';

/** JSON values; placeholder until the serdes issue adds validation and typed decode errors. */
export function jsonSerde<T>(): Serde<T> {
  return {
    name: 'json',
    serialize: (value) => (value === null || value === undefined ? null : Buffer.from(JSON.stringify(value), 'utf8')),
    deserialize: (data) => (data === null ? (null as T) : (JSON.parse(data.toString('utf8')) as T)),
  };
}
