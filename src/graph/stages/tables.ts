// Compile steps of the table stages: a stream turned into a table (its store), operations on a
// table's rows, and global tables (read whole by every worker, outside the tasks).
import { StatefulWithoutKeyError } from '../errors.ts';
import type { StageCompilers } from '../stage-compile.ts';

export const TABLE_STAGES: StageCompilers = {
  toTable: (s, spec) => {
    const parent = s.parents[0]!;
    if (parent.keyless) throw new StatefulWithoutKeyError('toTable', s.loc(s.name));
    const store = s.storeName(spec.store);
    const key = s.requireSerde(s.def.keySerde, 'the key of the table', 'pass toTable({ key }) or give the stream a key serde');
    const value = s.requireSerde(s.def.valueSerde, 'the value of the table', 'pass toTable({ value }); the stream lost its value serde at a mapValues/map/flatMap');
    if (parent.keyChanged) s.node.parents = [s.repartition(parent, store, key, value)];
    s.node.keyChanged = false;
    const tableSource = parent.spec.kind === 'source' && parent.spec.table === true ? parent.spec.topic : undefined;
    s.addStore(store, 'key-value', key, value, undefined, tableSource);
  },
  tableFilter: (s) => {
    s.node.tableInputs = [s.requireTable(s.parents[0]!).name];
  },
  tableMapValues: (s) => {
    s.node.tableInputs = [s.requireTable(s.parents[0]!).name];
  },
  globalTable: (s, spec) => {
    s.checkTopic(spec.topic, s.name);
    s.claimSourceTopic(spec.topic);
    const store = s.storeName(spec.store);
    s.claimStore(store);
    s.node.globalStore = store;
    s.addGlobalTable({ store, node: s.name, topic: spec.topic, keySerde: s.def.keySerde!, valueSerde: s.def.valueSerde! });
    // Not part of any sub-topology: every worker reads it whole, outside the tasks.
    return 'outside-tasks';
  },
};
