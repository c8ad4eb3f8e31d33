// The records a foreign-key table join (Kafka Streams' KIP-213) sends between the left table's tasks
// and the right table's, and the key of the right side's subscription store. The left side sends a
// Subscription keyed by the foreign key (so it lands in the task holding the right row); the right
// side answers with a Response keyed by the left key (so it lands back in the task of the left row).
import { createHash } from 'node:crypto';
import type { Serde, SerdeContext, SerdeEnvironment } from '../serdes/serde.ts';
import { SerdeError } from '../serdes/errors.ts';

/**
 * What the right side does with a subscription. `propagate`: remember it and answer with the right
 * row or null (a left row that had a result must see it go when its new foreign key has no row);
 * `propagate-if-found`: a new left row, answered only if the right row exists (an inner join has no
 * result to take back); `unsubscribe`: forget the left row for this foreign key, no answer.
 */
export type SubscriptionInstruction = 'propagate' | 'propagate-if-found' | 'unsubscribe';

export interface Subscription {
  readonly instruction: SubscriptionInstruction;
  /** Hash of the left row's value when it was sent: answers to an older value are recognised and dropped. */
  readonly hash: Buffer;
  /** The left row's key. */
  readonly key: unknown;
}

export interface ForeignKeyResponse {
  /** The hash of the subscription this answers. */
  readonly hash: Buffer;
  /** The right row; null: there is none. */
  readonly value: unknown;
}

/** The key of one subscription in the right side's store: its foreign key, then the left key. */
export interface SubscriptionKey {
  readonly foreignKey: unknown;
  readonly key: unknown;
}

/** A subscription or response record, or a subscription store key, whose bytes do not parse. */
export class ForeignKeyJoinRecordInvalidError extends SerdeError {
  readonly code = 'FK_JOIN_RECORD_INVALID';
}

/** The one place FK_JOIN_RECORD_INVALID is raised. */
function invalid(ctx: SerdeContext, detail: string): never {
  throw new ForeignKeyJoinRecordInvalidError(ctx, 'deserialize', detail);
}

export const HASH_BYTES = 16;
const LENGTH_BYTES = 4;
const INSTRUCTIONS: readonly SubscriptionInstruction[] = ['propagate', 'propagate-if-found', 'unsubscribe'];
const NO_HASH = Buffer.alloc(HASH_BYTES);

/**
 * The hash a left value is recognised by: of its encoded bytes, as Kafka Streams (which uses murmur3;
 * any 128-bit hash does, it is compared for equality only). A deleted row has none.
 */
export function valueHash(encoded: Buffer | null): Buffer {
  return encoded === null ? NO_HASH : createHash('sha256').update(encoded).digest().subarray(0, HASH_BYTES);
}

function encode(serde: Serde<unknown>, value: unknown, ctx: SerdeContext): Buffer {
  return serde.serialize(value, ctx) ?? Buffer.alloc(0);
}

/**
 * Where left values are encoded to be hashed: a topic of its own, as Kafka Streams' hash pseudo-topic,
 * so that a schema-registry serde registers the left value under no real topic's subject.
 */
export const hashContext = (joinName: string): SerdeContext => ({ topic: `${joinName}-fk-join-hash-pseudo-topic`, role: 'value' });

/** An inner serde and, when it is not the envelope's own, the context it is used in. */
type Inner = Serde<unknown> | { readonly serde: Serde<unknown>; readonly ctx: SerdeContext };

/** A serde around inner ones: their start-up work (a registry serde's schema registration) is passed on. */
function envelope<T>(name: string, inners: readonly Inner[], serialize: Serde<T>['serialize'], deserialize: Serde<T>['deserialize']): Serde<T> {
  const prepares = inners.map((inner) => ('serde' in inner ? inner : { serde: inner, ctx: undefined })).filter((inner) => inner.serde.prepare !== undefined);
  return {
    name,
    serialize,
    deserialize,
    ...(prepares.length > 0 ? { prepare: (ctx: SerdeContext, env: SerdeEnvironment) => Promise.all(prepares.map((inner) => inner.serde.prepare!(inner.ctx ?? ctx, env))).then(() => undefined) } : {}),
  };
}

/**
 * Layout: instruction (1 byte), hash (16 bytes), the left key encoded with the left table's key serde.
 * `hashed`: the left table's value serde, prepared in the join's hash context, where both sides of the
 * join encode left values to hash them.
 */
export function subscriptionSerde(leftKey: Serde<unknown>, hashed: { readonly serde: Serde<unknown>; readonly ctx: SerdeContext }): Serde<Subscription> {
  return envelope<Subscription>(
    `fk-subscription(${leftKey.name})`,
    [leftKey, hashed],
    (s, ctx) => Buffer.concat([Buffer.of(INSTRUCTIONS.indexOf(s.instruction)), s.hash, encode(leftKey, s.key, ctx)]),
    (data, ctx) => {
      const instruction = INSTRUCTIONS[data?.[0] ?? -1];
      if (data === null || instruction === undefined || data.length < 1 + HASH_BYTES) return invalid(ctx, `expected a foreign-key subscription, got ${data === null ? 'no bytes' : `${data.length} bytes`}`);
      return { instruction, hash: data.subarray(1, 1 + HASH_BYTES), key: leftKey.deserialize(data.subarray(1 + HASH_BYTES), ctx) };
    },
  );
}

/** Layout: 1 if a right row follows else 0 (1 byte), hash (16 bytes), the row encoded with the right table's value serde. */
export function responseSerde(rightValue: Serde<unknown>): Serde<ForeignKeyResponse> {
  return envelope<ForeignKeyResponse>(
    `fk-response(${rightValue.name})`,
    [rightValue],
    (r, ctx) => Buffer.concat([Buffer.of(r.value === null ? 0 : 1), r.hash, r.value === null ? Buffer.alloc(0) : encode(rightValue, r.value, ctx)]),
    (data, ctx) => {
      if (data === null || data.length < 1 + HASH_BYTES || data[0]! > 1) return invalid(ctx, `expected a foreign-key response, got ${data === null ? 'no bytes' : `${data.length} bytes`}`);
      return { hash: data.subarray(1, 1 + HASH_BYTES), value: data[0] === 0 ? null : rightValue.deserialize(data.subarray(1 + HASH_BYTES), ctx) };
    },
  );
}

/** The store key's first part: every subscription of one foreign key starts with it. */
export function subscriptionPrefix(foreignKeyBytes: Buffer): Buffer {
  const head = Buffer.alloc(LENGTH_BYTES);
  head.writeUInt32BE(foreignKeyBytes.length, 0);
  return Buffer.concat([head, foreignKeyBytes]);
}

/** Splits a subscription store key into the foreign key's bytes and the left key's. */
export function splitSubscriptionKey(storeKey: Buffer): { readonly foreignKey: Buffer; readonly key: Buffer } | undefined {
  const length = storeKey.length >= LENGTH_BYTES ? storeKey.readUInt32BE(0) : -1;
  if (length < 0 || LENGTH_BYTES + length > storeKey.length) return undefined;
  return { foreignKey: storeKey.subarray(LENGTH_BYTES, LENGTH_BYTES + length), key: storeKey.subarray(LENGTH_BYTES + length) };
}

/** Keys of the subscription store: the foreign key's length (4 bytes), the foreign key, the left key. */
export function subscriptionKeySerde(foreignKey: Serde<unknown>, leftKey: Serde<unknown>): Serde<SubscriptionKey> {
  return envelope<SubscriptionKey>(
    `fk-subscription-key(${foreignKey.name},${leftKey.name})`,
    [foreignKey, leftKey],
    (k, ctx) => Buffer.concat([subscriptionPrefix(encode(foreignKey, k.foreignKey, ctx)), encode(leftKey, k.key, ctx)]),
    (data, ctx) => {
      const parts = data === null ? undefined : splitSubscriptionKey(data);
      if (parts === undefined) return invalid(ctx, 'expected a foreign-key subscription key');
      return { foreignKey: foreignKey.deserialize(parts.foreignKey, ctx), key: leftKey.deserialize(parts.key, ctx) };
    },
  );
}

/** Values of the subscription store: the hash of the left value that subscribed. */
export const subscriptionHashSerde: Serde<Buffer> = {
  name: 'fk-subscription-hash',
  serialize: (hash) => hash,
  deserialize: (data, ctx) => (data !== null && data.length === HASH_BYTES ? data : invalid(ctx, `expected a ${HASH_BYTES}-byte hash`)),
};
