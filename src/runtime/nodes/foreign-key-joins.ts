// A foreign-key table join inside the tasks (the stages: dsl/foreign-key-joins.ts). The left table's
// task sends a subscription per left update to the task of the right row, which keeps it and answers
// it, and answers again on every update of that right row; the left table's task joins an answer with
// the left row only if the row is still the value that asked (its hash): an answer to an older value,
// overtaken by a foreign-key change whose answer came first, is dropped.
import type { CompiledNode, CompiledStore } from '../../graph/types.ts';
import type { Serde, SerdeContext } from '../../serdes/serde.ts';
import { mapKey } from '../../state/store.ts';
import type { TransactionalStore } from '../../state/transactional.ts';
import { hashContext, splitSubscriptionKey, subscriptionPrefix, valueHash, type ForeignKeyResponse, type Subscription } from '../../state/foreign-key-join.ts';
import { JoinNode } from './join-node.ts';
import type { NodeFactories, RowReader } from './node-factory.ts';
import type { Spec } from './runtime-node.ts';
import { StatefulNode } from './stateful.ts';
import type { Step } from './step.ts';
import type { TaskState } from './task-state.ts';

function leftValueHash(serde: Serde<unknown>, ctx: SerdeContext, value: unknown): Buffer {
  return valueHash(serde.serialize(value, ctx) ?? Buffer.alloc(0));
}

/**
 * After the left table: sends each update to the task of its foreign key's right row, and an
 * unsubscription to the task of the foreign key it leaves. Its store keeps the foreign key each left
 * row last subscribed to, which the table upstream no longer knows when the update arrives.
 */
export class ForeignKeySubscribeNode extends StatefulNode {
  readonly #spec = this.node.spec as Spec<'fkSubscribe'>;
  readonly #hashCtx = hashContext(this.#spec.base);

  protected apply(key: unknown, value: unknown): Step {
    if (key === null || key === undefined) {
      this.task.metrics.nullKeysDropped++;
      return;
    }
    const live = value === null || value === undefined ? undefined : value;
    const extracted = live === undefined ? undefined : this.checkSync(this.#spec.foreignKey(live));
    const foreignKey = extracted === null ? undefined : extracted;
    const foreignKeyBytes = foreignKey === undefined ? undefined : (this.storeSpec.valueSerde.serialize(foreignKey, this.valueCtx) ?? Buffer.alloc(0));
    const hash = live === undefined ? valueHash(null) : leftValueHash(this.#spec.leftValueSerde!, this.#hashCtx, live);
    const kb = this.keyBytes(key);
    const stored = this.store.get(kb);
    if (foreignKeyBytes !== undefined) this.store.put(kb, foreignKeyBytes, this.task.timestamp);
    else if (stored !== undefined) this.store.delete(kb, this.task.timestamp);
    const sends: [unknown, Subscription][] = [];
    if (stored !== undefined && (foreignKeyBytes === undefined || !foreignKeyBytes.equals(stored))) {
      sends.push([this.storeSpec.valueSerde.deserialize(stored, this.valueCtx), { instruction: 'unsubscribe', hash, key }]);
    }
    if (foreignKey !== undefined) {
      // A left row that had no foreign key had no inner-join result to take back if the right row is missing.
      const instruction = stored === undefined && this.#spec.mode === 'inner' ? 'propagate-if-found' : 'propagate';
      sends.push([foreignKey, { instruction, hash, key }]);
    }
    return this.forwardPairs(sends, 0);
  }
}

/**
 * Beside the right table: keeps the subscriptions by foreign key (store key: the foreign key's length
 * and bytes, then the left key's bytes; value: the subscribing left value's hash) and answers each
 * subscription, and each right update to all of its foreign key's subscribers, keyed by the left key.
 */
export class ForeignKeySubscriptionJoinNode extends JoinNode {
  readonly #spec = this.node.spec as Spec<'fkSubscriptionJoin'>;
  readonly #store: TransactionalStore;
  readonly #keyCtx: SerdeContext;
  /** The store's keys by foreign key (mapKey of its bytes), then by left key; rebuilt after a rollback. */
  #byForeignKey: Map<string, Map<string, Buffer>> | undefined;

  constructor(task: TaskState, node: CompiledNode, subscriptions: { store: TransactionalStore; spec: CompiledStore }, right: RowReader) {
    super(task, node, [(foreignKey, subscription) => this.#onSubscription(foreignKey, subscription as Subscription, right), (foreignKey, value) => this.#onRightUpdate(foreignKey, value)]);
    this.#store = subscriptions.store;
    this.#keyCtx = { topic: subscriptions.spec.changelogTopic, role: 'key' };
  }

  override reset(): void {
    this.#byForeignKey = undefined;
  }

  #index(): Map<string, Map<string, Buffer>> {
    if (this.#byForeignKey !== undefined) return this.#byForeignKey;
    const index = new Map<string, Map<string, Buffer>>();
    for (const [storeKey] of this.#store.entries()) {
      const parts = splitSubscriptionKey(storeKey);
      if (parts !== undefined) this.#subscribersOf(index, parts.foreignKey).set(mapKey(parts.key), storeKey);
    }
    this.#byForeignKey = index;
    return index;
  }

  #subscribersOf(index: Map<string, Map<string, Buffer>>, foreignKeyBytes: Buffer): Map<string, Buffer> {
    const k = mapKey(foreignKeyBytes);
    return index.get(k) ?? index.set(k, new Map()).get(k)!;
  }

  #foreignKeyBytes(foreignKey: unknown): Buffer {
    return this.#spec.foreignKeySerde!.serialize(foreignKey, this.#keyCtx) ?? Buffer.alloc(0);
  }

  #onSubscription(foreignKey: unknown, subscription: Subscription, right: RowReader): Step {
    if (foreignKey === null || foreignKey === undefined) {
      this.task.metrics.nullKeysDropped++;
      return;
    }
    const foreignKeyBytes = this.#foreignKeyBytes(foreignKey);
    const leftKeyBytes = this.#spec.leftKeySerde!.serialize(subscription.key, this.#keyCtx) ?? Buffer.alloc(0);
    const storeKey = Buffer.concat([subscriptionPrefix(foreignKeyBytes), leftKeyBytes]);
    const subscribers = this.#subscribersOf(this.#index(), foreignKeyBytes);
    if (subscription.instruction === 'unsubscribe') {
      if (this.#store.get(storeKey) !== undefined) this.#store.delete(storeKey, this.task.timestamp);
      subscribers.delete(mapKey(leftKeyBytes));
      return;
    }
    this.#store.put(storeKey, subscription.hash, this.task.timestamp);
    subscribers.set(mapKey(leftKeyBytes), storeKey);
    const row = right.row(foreignKey);
    if (row === undefined && subscription.instruction === 'propagate-if-found') return;
    return this.forward(subscription.key, { hash: subscription.hash, value: row ?? null } satisfies ForeignKeyResponse);
  }

  #onRightUpdate(foreignKey: unknown, value: unknown): Step {
    if (foreignKey === null || foreignKey === undefined) return;
    const subscribers = this.#index().get(mapKey(this.#foreignKeyBytes(foreignKey)));
    if (subscribers === undefined) return;
    const answers: [unknown, ForeignKeyResponse][] = [];
    for (const storeKey of subscribers.values()) {
      const hash = this.#store.get(storeKey);
      const parts = splitSubscriptionKey(storeKey);
      if (hash === undefined || parts === undefined) continue;
      answers.push([this.#spec.leftKeySerde!.deserialize(parts.key, this.#keyCtx), { hash, value: value ?? null }]);
    }
    return this.forwardPairs(answers, 0);
  }
}

/**
 * Beside the left table: joins an answer with the left row if the row is still the value that
 * subscribed. A deleted left row, or one without a foreign key, needs no answer: its result (a
 * tombstone, or for a left join the row joined with null) is emitted when the table update arrives.
 */
export class ForeignKeyResponseJoinNode extends JoinNode {
  readonly #spec = this.node.spec as Spec<'fkResponseJoin'>;
  readonly #hashCtx = hashContext(this.#spec.base);

  constructor(task: TaskState, node: CompiledNode, left: RowReader) {
    super(task, node, [(key, response) => this.#onResponse(key, response as ForeignKeyResponse, left), (key, value) => this.#onLeftUpdate(key, value)]);
  }

  #onResponse(key: unknown, response: ForeignKeyResponse, left: RowReader): Step {
    if (key === null || key === undefined) return;
    const row = left.row(key);
    if (row === undefined || !leftValueHash(this.#spec.leftValueSerde!, this.#hashCtx, row).equals(response.hash)) {
      this.task.metrics.staleVersionsDropped++;
      return;
    }
    if (response.value === null && this.#spec.mode === 'inner') return this.forward(key, null);
    return this.forward(key, this.join(key, row, response.value));
  }

  #onLeftUpdate(key: unknown, value: unknown): Step {
    if (key === null || key === undefined) return;
    if (value === null || value === undefined) return this.forward(key, null);
    const foreignKey = this.checkSync(this.#spec.foreignKey(value));
    if (foreignKey !== null && foreignKey !== undefined) return;
    return this.forward(key, this.#spec.mode === 'inner' ? null : this.join(key, value, null));
  }
}

export const FOREIGN_KEY_JOIN_NODES = {
  fkSubscribe: ({ task, node, storeOf }) => {
    const s = storeOf(node.stores[0]!);
    return new ForeignKeySubscribeNode(task, node, s.store, s.spec);
  },
  fkSubscriptionJoin: ({ task, node, storeOf, tableInput }) => new ForeignKeySubscriptionJoinNode(task, node, storeOf(node.stores[0]!), tableInput(0)),
  fkResponseJoin: ({ task, node, tableInput }) => new ForeignKeyResponseJoinNode(task, node, tableInput(0)),
} satisfies NodeFactories;
