import type { Serde } from './serde.ts';

/** UTF-8 strings; a null record key or value stays null. */
export const stringSerde: Serde<string | null> = {
  name: 'string',
  serialize: (value) => (value === null ? null : Buffer.from(value, 'utf8')),
  deserialize: (data) => (data === null ? null : data.toString('utf8')),
};

/** Raw bytes, untouched. */
export const bytesSerde: Serde<Buffer | null> = {
  name: 'bytes',
  serialize: (value) => value,
  deserialize: (data) => data,
};
