/**
 * Committed state of one store in one task, in bytes. Implementations need no transactions of
 * their own: TransactionalStore buffers the open transaction's writes and applies them on commit.
 */
export interface KeyValueStore {
  get(key: Buffer): Buffer | undefined;
  put(key: Buffer, value: Buffer): void;
  delete(key: Buffer): void;
  entries(): Iterable<readonly [Buffer, Buffer]>;
  readonly size: number;
}

export type StoreKind = 'key-value' | 'window' | 'session' | 'suppress' | 'dedupe' | 'version' | 'join-window' | 'versioned' | 'join-buffer';

export interface StoreFactoryRequest {
  readonly name: string;
  readonly kind: StoreKind;
  readonly subtopology: number;
  readonly partition: number;
}

export type StoreFactory = (req: StoreFactoryRequest) => KeyValueStore;

/** Buffers as map keys: latin1 maps each byte to one UTF-16 unit, so the mapping is exact. */
export function mapKey(key: Buffer): string {
  return key.toString('latin1');
}

export class InMemoryKeyValueStore implements KeyValueStore {
  readonly #map = new Map<string, readonly [Buffer, Buffer]>();

  get(key: Buffer): Buffer | undefined {
    return this.#map.get(mapKey(key))?.[1];
  }

  put(key: Buffer, value: Buffer): void {
    this.#map.set(mapKey(key), [key, value]);
  }

  delete(key: Buffer): void {
    this.#map.delete(mapKey(key));
  }

  entries(): Iterable<readonly [Buffer, Buffer]> {
    return this.#map.values();
  }

  get size(): number {
    return this.#map.size;
  }
}

export const inMemoryStoreFactory: StoreFactory = () => new InMemoryKeyValueStore();
