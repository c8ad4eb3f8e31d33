// The foreign-key table join (Kafka Streams' KIP-213): each row of the left table joins the right
// table's row whose key its foreign-key extractor gives. The two tables are partitioned by different
// keys, so a row is sent, by its foreign key, to the task holding the right row, and the answer comes
// back, by the left key, to the task holding the left row (graph/stages/foreign-key-joins.ts).
import type { Serde } from '../serdes/serde.ts';
import type { JoinerFn, NodeRecorder, StageSpec, ValueOnlyFn } from './nodes.ts';
import type { AnySerde } from './serde-typing.ts';
import type { JoinOptions } from './types.ts';

export interface ForeignKeyJoinOptions<R> extends JoinOptions<R> {
  /**
   * Materializes the result in a key-value store of this name (changelogged, queryable), so that
   * `filter`, `mapValues` and joins can read its rows; needs `value`. Unmaterialized, the result's
   * updates flow on (toStream, groupBy) but it has no rows to read.
   */
  readonly store?: string;
}

/** The two tables as the join sees them. */
export interface ForeignKeyJoinSides {
  readonly builder: NodeRecorder;
  readonly left: { readonly nodeIndex: number; readonly keySerde: Serde<unknown> | undefined; readonly valueSerde: Serde<unknown> | undefined };
  readonly right: { readonly nodeIndex: number; readonly keySerde: Serde<unknown> | undefined; readonly valueSerde: Serde<unknown> | undefined };
}

export interface ForeignKeyJoinRequest {
  readonly mode: 'inner' | 'left';
  readonly foreignKey: ValueOnlyFn;
  readonly joiner: JoinerFn;
  /** The result's name (its stores and topics are named after it); defaults to one derived from its position. */
  readonly name?: string;
  readonly valueSerde?: Serde<unknown>;
  readonly store?: string;
}

/**
 * Records the join's three stages and returns the index of the last, whose records are the result:
 * keyed by the left key, a null value when a left row has no result any more.
 */
export function recordForeignKeyJoin(sides: ForeignKeyJoinSides, request: ForeignKeyJoinRequest): number {
  const { builder, left, right } = sides;
  const base = request.name ?? `KTABLE-FK-JOIN-${String(builder.nodes.length + 2).padStart(10, '0')}`;
  const leftKey = left.keySerde ? { leftKeySerde: left.keySerde } : {};
  const leftValue = left.valueSerde ? { leftValueSerde: left.valueSerde } : {};
  const rightValue = right.valueSerde ? { rightValueSerde: right.valueSerde } : {};
  const serdes = { ...leftKey, ...(right.keySerde ? { foreignKeySerde: right.keySerde } : {}) };
  const subscribe: StageSpec = { kind: 'fkSubscribe', mode: request.mode, base, foreignKey: request.foreignKey, ...serdes, ...leftValue };
  const subscribeIndex = builder.addNode(subscribe, [left.nodeIndex], request.name === undefined ? undefined : `${base}-subscription-registration`, right.keySerde as AnySerde | undefined, undefined);
  const answer: StageSpec = { kind: 'fkSubscriptionJoin', base, ...serdes, ...leftValue, ...rightValue };
  const answerIndex = builder.addNode(answer, [subscribeIndex, right.nodeIndex], request.name === undefined ? undefined : `${base}-subscription-processor`, left.keySerde as AnySerde | undefined, undefined);
  const result: StageSpec = {
    kind: 'fkResponseJoin',
    mode: request.mode,
    base,
    foreignKey: request.foreignKey,
    joiner: request.joiner,
    ...leftKey,
    ...leftValue,
    ...rightValue,
  };
  const resultIndex = builder.addNode(result, [answerIndex, left.nodeIndex], request.name, left.keySerde as AnySerde | undefined, request.valueSerde as AnySerde | undefined);
  if (request.store === undefined) return resultIndex;
  // The result's updates into a table of their own, as Kafka Streams' Materialized.as(store) on the join.
  return builder.addNode({ kind: 'toTable', store: request.store }, [resultIndex], undefined, left.keySerde as AnySerde | undefined, request.valueSerde as AnySerde | undefined);
}
