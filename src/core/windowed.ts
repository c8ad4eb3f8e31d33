// Here rather than in dsl/types.ts: state/ encodes these keys and must not depend on the DSL.

/** The key of a windowed aggregate: the grouping key and the window bounds (end exclusive). */
export interface Windowed<K> {
  readonly key: K;
  readonly start: number;
  readonly end: number;
}
