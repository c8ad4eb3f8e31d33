import type { Windowed } from '../core/windowed.ts';
import type { Serde, SerdeContext } from '../serdes/serde.ts';
import { sessionStoreKey, splitSessionStoreKey } from './session.ts';
import { splitWindowStoreKey, windowStoreKey } from './windowed.ts';

/** How a store lays out its keys: the key serde, and for a window or session store the window. */
export interface StoreKeyLayout {
  readonly changelogTopic: string;
  readonly keySerde: Serde<unknown>;
  readonly window?: { readonly sizeMs: number };
  readonly session?: unknown;
}

/**
 * A store's keys as its stages write them: the serialized key, followed for a window store by the
 * window start and for a session store by the session's start and end. Every reader outside the
 * stages (the test driver, diagnostics, interactive queries) goes through here, so the layout is
 * decoded in one place.
 */
export class StoreKeys {
  readonly #keyCtx: SerdeContext;

  constructor(private readonly layout: StoreKeyLayout) {
    this.#keyCtx = { topic: layout.changelogTopic, role: 'key' };
  }

  /** The serialized form of a plain key (no window part), as the store and the partitioner see it. */
  inner(key: unknown): Buffer {
    return this.layout.keySerde.serialize(key, this.#keyCtx) ?? Buffer.alloc(0);
  }

  /** A key as stored: window and session stores take a `Windowed<K>` (a window store ignores `end`). */
  encode(key: unknown): Buffer {
    if (this.layout.session) {
      const w = key as Windowed<unknown>;
      return sessionStoreKey(this.inner(w.key), w.start, w.end);
    }
    if (this.layout.window) {
      const w = key as Windowed<unknown>;
      return windowStoreKey(this.inner(w.key), w.start);
    }
    return this.inner(key);
  }

  /** A stored key back to what the stage keyed by: window and session stores yield `Windowed<K>`. */
  decode(stored: Buffer): unknown {
    if (this.layout.session) {
      const { inner, start, end } = splitSessionStoreKey(stored);
      return { key: this.decodeInner(inner), start, end };
    }
    if (this.layout.window) {
      const { inner, start } = splitWindowStoreKey(stored);
      return { key: this.decodeInner(inner), start, end: start + this.layout.window.sizeMs };
    }
    return this.decodeInner(stored);
  }

  decodeInner(inner: Buffer): unknown {
    return this.layout.keySerde.deserialize(inner, this.#keyCtx);
  }
}
