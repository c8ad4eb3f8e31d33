// Compile steps of the table stages: a stream turned into a table (its store), operations on a
// table's rows, and global tables (read whole by every worker, outside the tasks).
import { InvalidStageOptionError, StatefulWithoutKeyError } from '../errors.ts';
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
    const versioned = spec.versioned;
    if (versioned === undefined) {
      s.addStore(store, 'key-value', key, value, undefined, tableSource);
      return;
    }
    const retention = versioned.historyRetentionMs;
    if (!(Number.isSafeInteger(retention) && retention > 0)) throw new InvalidStageOptionError(`a versioned table's historyRetentionMs must be a positive whole number of milliseconds, got ${retention}`, s.loc(s.name));
    // Never the source topic as changelog: compaction keeps one value per key there, and a history needs them all.
    s.addStore(store, 'versioned', key, value, undefined, undefined, versioned);
  },
  tableFilter: (s) => {
    s.node.tableInputs = [s.requireTable(s.parents[0]!).name];
  },
  tableMapValues: (s) => {
    s.node.tableInputs = [s.requireTable(s.parents[0]!).name];
  },
  tableGroupBy: (s, spec) => {
    // No requireTable: the stage reads no rows of its input, it keeps its own (so it may follow a suppress or a windowed aggregate).
    const key = s.requireSerde(spec.rowKeySerde, 'the key of the rows a table re-grouping keeps', 'give the table a key serde (table(topic, { key }) or toTable({ key }))');
    const value = s.requireSerde(spec.rowValueSerde, 'the value of the rows a table re-grouping keeps', 'give the table a value serde (pass { value } to the mapValues or join before groupBy)');
    s.addStore(s.storeName(spec.store), 'key-value', key, value);
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
