// Compile steps of a foreign-key table join's three stages (dsl/foreign-key-joins.ts). The left
// table's sub-topology sends subscriptions through a topic keyed by foreign key, co-partitioned with
// the right table; the right table's sub-topology answers through a topic keyed by the left key,
// co-partitioned with the left table, so the two sub-topologies feed each other (compile.ts lets
// this one loop through: an answer never makes a subscription, so records do not go round).
import { hashContext, responseSerde, subscriptionHashSerde, subscriptionKeySerde, subscriptionSerde } from '../../state/foreign-key-join.ts';
import type { Serde } from '../../serdes/serde.ts';
import type { StageCompile, StageCompilers } from '../stage-compile.ts';

/** The join's stores and topics are all named from its base: `<base>-foreign-keys`, `<appId>-<base>-subscription-repartition`, ... */
export const foreignKeyStores = (base: string) => ({ foreignKeys: `${base}-foreign-keys`, subscriptions: `${base}-subscriptions`, subscriptionTopic: `${base}-subscription`, responseTopic: `${base}-response` }) as const;

const leftKeySerde = (s: StageCompile, serde: Serde<unknown> | undefined): Serde<unknown> =>
  s.requireSerde(serde, 'the key of the left table of a foreign-key join', 'give the table a key serde (table(topic, { key }) or toTable({ key }))');

function serdes(s: StageCompile, spec: { readonly leftKeySerde?: Serde<unknown>; readonly foreignKeySerde?: Serde<unknown> }): { leftKey: Serde<unknown>; foreignKey: Serde<unknown> } {
  return {
    leftKey: leftKeySerde(s, spec.leftKeySerde),
    foreignKey: s.requireSerde(spec.foreignKeySerde, 'the key of the right table of a foreign-key join (foreign keys are encoded with it)', 'give the other table a key serde'),
  };
}

export const FOREIGN_KEY_JOIN_STAGES: StageCompilers = {
  fkSubscribe: (s, spec) => {
    const { leftKey, foreignKey } = serdes(s, spec);
    s.requireSerde(spec.leftValueSerde, 'the value of the left table of a foreign-key join (answers are matched by a hash of it)', 'give the table a value serde (pass { value } to the mapValues or join before)');
    s.addStore(foreignKeyStores(spec.base).foreignKeys, 'key-value', leftKey, foreignKey);
  },
  fkSubscriptionJoin: (s, spec) => {
    const { leftKey, foreignKey } = serdes(s, spec);
    const names = foreignKeyStores(spec.base);
    const right = s.requireTable(s.parents[1]!);
    s.requireSerde(spec.rightValueSerde, 'the value of the right table of a foreign-key join (the answers carry it)', 'give the other table a value serde');
    const hashed = s.requireSerde(spec.leftValueSerde, 'the value of the left table of a foreign-key join', 'give the table a value serde');
    const subscriptionValues = subscriptionSerde(leftKey, { serde: hashed, ctx: hashContext(spec.base) });
    const subscriptions = s.repartition(s.parents[0]!, names.subscriptionTopic, foreignKey, subscriptionValues as Serde<unknown>);
    s.checkJoinKeys(subscriptions, right);
    s.node.parents = [subscriptions, right];
    s.node.tableInputs = [right.name];
    s.addStore(names.subscriptions, 'key-value', subscriptionKeySerde(foreignKey, leftKey) as Serde<unknown>, subscriptionHashSerde as Serde<unknown>);
  },
  fkResponseJoin: (s, spec) => {
    const leftKey = leftKeySerde(s, spec.leftKeySerde);
    const rightValue = s.requireSerde(spec.rightValueSerde, 'the value of the right table of a foreign-key join', 'give the other table a value serde');
    const left = s.requireTable(s.parents[1]!);
    const responses = s.repartition(s.parents[0]!, foreignKeyStores(spec.base).responseTopic, leftKey, responseSerde(rightValue) as Serde<unknown>);
    s.node.parents = [responses, left];
    s.node.tableInputs = [left.name];
    s.node.keyChanged = false;
    s.node.keyless = false;
  },
};
