/** What one write of the current record replaced in a per-transaction map (undefined: the key was absent). */
export interface UndoEntry<V> {
  readonly k: string;
  readonly prev: V | undefined;
}

/**
 * Ends the current record's writes to `map`: when the record failed, puts back, newest first, what they
 * replaced, so a dead-lettered record leaves nothing behind; either way the undo log is emptied.
 */
export function endRecordWrites<V>(map: Map<string, V>, undo: UndoEntry<V>[], ok: boolean): void {
  if (undo.length === 0) return;
  if (!ok) {
    for (let i = undo.length - 1; i >= 0; i--) {
      const { k, prev } = undo[i]!;
      if (prev === undefined) map.delete(k);
      else map.set(k, prev);
    }
  }
  undo.length = 0;
}
