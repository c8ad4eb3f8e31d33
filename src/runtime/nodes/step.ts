/** What a stage call returns: void on the synchronous fast path, a Promise only when something async is involved. */
export type Step = void | Promise<void>;

export function isThenable(x: unknown): x is PromiseLike<unknown> {
  return x !== null && (typeof x === 'object' || typeof x === 'function') && typeof (x as { then?: unknown }).then === 'function';
}
