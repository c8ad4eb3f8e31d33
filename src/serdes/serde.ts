/** Where a serde is used: one topic, as key or value. */
export interface SerdeContext {
  readonly topic: string;
  readonly role: 'key' | 'value';
}

/** What a serde may need at start-up (the registry serdes use it). */
export interface SerdeEnvironment {
  readonly registryUrl?: string;
}

/**
 * Converts between bytes on a topic and values in a topology.
 * serialize/deserialize are synchronous because they sit on the per-record hot path;
 * a serde that needs I/O does it in `prepare` (once per topic, at start) or in
 * `resolve` (only when a record needs something not cached yet, e.g. an unknown writer schema id).
 */
export interface Serde<T> {
  readonly name: string;
  /**
   * For a serde whose encoding a schema decides (Avro): a hash of that schema, so that a new version
   * of a topology that stores another schema under the same serde name is told apart (graph/fingerprint.ts).
   */
  readonly schemaHash?: string;
  serialize(value: T, ctx: SerdeContext): Buffer | null;
  deserialize(data: Buffer | null, ctx: SerdeContext): T;
  /** Called once per (topic, role) before any record: register or look up schemas here. */
  prepare?(ctx: SerdeContext, env: SerdeEnvironment): Promise<void>;
  /** Returns null when `deserialize` can run now, else a promise to await first. */
  resolve?(data: Buffer | null, ctx: SerdeContext): Promise<void> | null;
}
