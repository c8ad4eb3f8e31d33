// Compile steps of the joins: which inputs must be tables, which streams go through a repartition
// topic first, the key serdes that must agree, and a stream-stream join's two window stores.
import type { Serde } from '../../serdes/serde.ts';
import { InvalidStageOptionError, InvalidWindowError } from '../errors.ts';
import { autoName, type StageCompile, type StageCompilers, type WorkNode } from '../stage-compile.ts';

export const JOIN_STAGES: StageCompilers = {
  streamTableJoin: (s, spec) => {
    const table = s.requireTable(s.parents[1]!);
    const first = s.parents[0]!;
    const stream = s.keyedInput(first, s.name, first.keySerde, first.valueSerde);
    s.checkJoinKeys(stream, table);
    s.node.parents = [stream, table];
    s.node.tableInputs = [table.name];
    s.node.keyChanged = false;
    s.node.keyless = false;
    if (spec.graceMs !== undefined) addGraceBuffer(s, spec.graceMs, spec, historyRetentionOf(table));
  },
  tableTableJoin: (s) => {
    const [left, right] = [s.requireTable(s.parents[0]!), s.requireTable(s.parents[1]!)];
    s.checkJoinKeys(left, right);
    s.node.tableInputs = [left.name, right.name];
  },
  streamStreamJoin: (s, spec) => {
    const w = spec.window;
    for (const [what, ms] of [['before', w.beforeMs], ['after', w.afterMs], ['grace', w.graceMs]] as const) {
      if (!(Number.isFinite(ms) && ms >= 0)) throw new InvalidWindowError(`join window ${what} must be zero or positive, got ${ms}`, s.loc(s.name));
    }
    const prefix = spec.store ?? s.def.userName ?? autoName(spec.kind, s.def.index).replace(/-(\d{10})$/, '-STORE-$1');
    const left = s.keyedInput(s.parents[0]!, `${prefix}-this`, spec.keySerde, spec.thisValueSerde);
    const right = s.keyedInput(s.parents[1]!, `${prefix}-other`, spec.keySerde, spec.otherValueSerde);
    s.checkJoinKeys(left, right);
    s.node.parents = [left, right];
    s.node.keyChanged = false;
    s.node.keyless = false;
    const key = s.requireSerde(spec.keySerde, 'the key of the join window stores', 'pass { key } in the join options');
    const thisValue = s.requireSerde(spec.thisValueSerde, 'the values of the join window store of this stream', 'pass { thisValue } in the join options');
    const otherValue = s.requireSerde(spec.otherValueSerde, 'the values of the join window store of the other stream', 'pass { otherValue } in the join options');
    s.addStore(`${prefix}-this`, 'join-window', key, thisValue);
    s.addStore(`${prefix}-other`, 'join-window', key, otherValue);
  },
  globalTableJoin: (s) => {
    const global = s.parents[1]!;
    s.node.parents = [s.parents[0]!];
    s.node.globalStore = global.globalStore!;
  },
};

/** The history retention of a versioned table, through the stages that read its rows as of a time (filter, mapValues). */
function historyRetentionOf(table: WorkNode): number | undefined {
  for (let n: WorkNode | undefined = table; n !== undefined; n = n.parents[0]) {
    if (n.spec.kind === 'toTable') return n.spec.versioned?.historyRetentionMs;
    if (n.spec.kind !== 'tableFilter' && n.spec.kind !== 'tableMapValues') return undefined;
  }
  return undefined;
}

/**
 * A stream-table join's grace period (KIP-923): the stream records wait in a store of their own. As in
 * Kafka Streams it needs a versioned table, whose history still holds the versions a record waited for.
 */
function addGraceBuffer(s: StageCompile, graceMs: number, buffer: { readonly store?: string; readonly keySerde?: Serde<unknown>; readonly valueSerde?: Serde<unknown> }, retentionMs: number | undefined): void {
  const loc = s.loc(s.name);
  if (!(Number.isSafeInteger(graceMs) && graceMs >= 0)) throw new InvalidWindowError(`a stream-table join's graceMs must be zero or a positive whole number of milliseconds, got ${graceMs}`, loc);
  if (retentionMs === undefined) throw new InvalidStageOptionError("a stream-table join's graceMs needs a versioned table (table(topic, { versioned: { historyRetentionMs } })): only its history still has the version a waiting record joins", loc);
  if (graceMs > retentionMs) throw new InvalidStageOptionError(`a stream-table join's graceMs (${graceMs}) may not exceed the table's historyRetentionMs (${retentionMs}): a record that waited longer would find its version gone`, loc);
  const key = s.requireSerde(buffer.keySerde, 'the key of the stream records a join with a grace period keeps', 'give the stream a key serde');
  const value = s.requireSerde(buffer.valueSerde, 'the value of the stream records a join with a grace period keeps', 'give the stream a value serde (pass { value } to the mapValues before the join)');
  s.addStore(buffer.store ?? `${s.def.userName ?? autoName('streamTableJoin', s.def.index)}-buffer`, 'join-buffer', key, value);
}
