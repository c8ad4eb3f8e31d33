/** A binary min-heap on `at`, for expiry and window-close deadlines. */
export class DeadlineHeap<T> {
  readonly #items: { at: number; item: T }[] = [];

  get size(): number {
    return this.#items.length;
  }

  clear(): void {
    this.#items.length = 0;
  }

  push(at: number, item: T): void {
    const a = this.#items;
    a.push({ at, item });
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (a[p]!.at <= a[i]!.at) break;
      [a[p], a[i]] = [a[i]!, a[p]!];
      i = p;
    }
  }

  /** Removes and returns the earliest entry if its deadline is at or before `now`. */
  popDue(now: number): { at: number; item: T } | undefined {
    const a = this.#items;
    if (a.length === 0 || a[0]!.at > now) return undefined;
    const top = a[0]!;
    const last = a.pop()!;
    if (a.length > 0) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && a[l]!.at < a[m]!.at) m = l;
        if (r < a.length && a[r]!.at < a[m]!.at) m = r;
        if (m === i) break;
        [a[m], a[i]] = [a[i]!, a[m]!];
        i = m;
      }
    }
    return top;
  }
}
