// Compile steps of the joins: which inputs must be tables, which streams go through a repartition
// topic first, the key serdes that must agree, and a stream-stream join's two window stores.
import { InvalidWindowError } from '../errors.ts';
import { autoName, type StageCompilers } from '../stage-compile.ts';

export const JOIN_STAGES: StageCompilers = {
  streamTableJoin: (s) => {
    const table = s.requireTable(s.parents[1]!);
    const first = s.parents[0]!;
    const stream = s.keyedInput(first, s.name, first.keySerde, first.valueSerde);
    s.checkJoinKeys(stream, table);
    s.node.parents = [stream, table];
    s.node.tableInputs = [table.name];
    s.node.keyChanged = false;
    s.node.keyless = false;
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
