import type { Serde, SerdeContext } from '../../src/serdes/index.ts';

/** As the task engine reads a record: await resolve() when it asks for it (an unseen writer schema), then deserialize. */
export async function readRecord<T>(serde: Serde<T>, bytes: Buffer | null, ctx: SerdeContext): Promise<T> {
  const pending = serde.resolve?.(bytes, ctx) ?? null;
  if (pending !== null) await pending;
  return serde.deserialize(bytes, ctx);
}
