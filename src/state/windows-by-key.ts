/**
 * A windowed store's windows grouped by record key (the latin1 of its bytes, see mapKey): the
 * in-memory index session and sliding aggregates rebuild from their store after a rollback, to find
 * a key's windows without scanning the store.
 */
export class WindowsByKey<W extends { readonly storeKey: Buffer }> {
  readonly #byKey = new Map<string, W[]>();

  of(key: string): readonly W[] {
    return this.#byKey.get(key) ?? [];
  }

  add(key: string, window: W): void {
    (this.#byKey.get(key) ?? this.#byKey.set(key, []).get(key)!).push(window);
  }

  remove(key: string, storeKey: Buffer): void {
    const windows = this.#byKey.get(key);
    if (windows === undefined) return;
    const at = windows.findIndex((w) => w.storeKey.equals(storeKey));
    if (at >= 0) windows.splice(at, 1);
    if (windows.length === 0) this.#byKey.delete(key);
  }

  clear(): void {
    this.#byKey.clear();
  }
}
