// Compile step of cogroup: every grouped stream whose key changed goes through a repartition topic of
// its own, so that all of them meet in one task per key (their topics are a co-partition group), and
// the stage owns the one store they all fold into.
import { InvalidStageOptionError, InvalidWindowError, StatefulWithoutKeyError } from '../errors.ts';
import type { StageCompilers } from '../stage-compile.ts';
import { checkWindow } from './stateful.ts';

export const COGROUP_STAGES: StageCompilers = {
  cogroup: (s, spec) => {
    const loc = s.loc(s.name);
    if (new Set(s.def.parents).size !== s.def.parents.length) throw new InvalidStageOptionError('cogroup takes each grouped stream once: a stream grouped twice the same way would reach the store twice; merge its aggregators into one', loc);
    const w = spec.window;
    if (w) {
      checkWindow(w, loc);
      if (w.type === 'sliding') throw new InvalidWindowError('a cogroup takes tumbling or hopping windows; aggregate each stream over sliding windows, or merge them before one windowed aggregate', loc);
    }
    const store = s.storeName(spec.store);
    const key = s.requireSerde(spec.inputs.find((i) => i.keySerde !== undefined)?.keySerde, 'the grouping key of cogroup', 'pass { key } to groupBy/groupByKey or give the streams a key serde');
    const state = s.requireSerde(spec.stateSerde, 'the state of cogroup', 'pass aggregate(init, { state })');
    const inputs = s.parents.map((parent, i) => {
      if (parent.keyless) throw new StatefulWithoutKeyError('cogroup', loc);
      if (!parent.keyChanged) return parent;
      const topicPrefix = `${store}-${i}`;
      const value = s.requireSerde(spec.inputs[i]!.valueSerde, `the value of repartition topic ${s.appId}-${topicPrefix}-repartition`, 'pass { value } to that groupBy/groupByKey; the stream lost its value serde at a mapValues/map/flatMap');
      return s.repartition(parent, topicPrefix, spec.inputs[i]!.keySerde ?? key, value);
    });
    s.node.parents = inputs;
    s.node.keyChanged = false;
    s.node.keyless = false;
    s.addStore(store, w ? 'window' : 'key-value', key, state, w);
  },
};
