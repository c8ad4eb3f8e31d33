// Compile steps of the stages that keep state per key: their stores, their repartition when the key
// changed upstream, and the checks of their windows, TTLs, buffers and punctuations.
import type { Serde } from '../../serdes/serde.ts';
import { stringSerde } from '../../serdes/basic.ts';
import { countSerde } from '../../state/internal-serdes.ts';
import { slidingWindowValueSerde } from '../../state/sliding-window.ts';
import type { WindowSpec } from '../../dsl/types.ts';
import { InvalidStageOptionError, InvalidWindowError, StatefulWithoutKeyError, type TopologyErrorLocation } from '../errors.ts';
import { isTable, type StageCompilers } from '../stage-compile.ts';

/** A tumbling, hopping or sliding window's sizes (a sliding window's size is its time difference). */
export function checkWindow(w: WindowSpec, loc: TopologyErrorLocation): void {
  const size = w.type === 'sliding' ? 'time difference' : 'size';
  if (!(Number.isFinite(w.sizeMs) && w.sizeMs > 0)) throw new InvalidWindowError(`${size} must be a positive number of milliseconds, got ${w.sizeMs}`, loc);
  if (!(Number.isFinite(w.graceMs) && w.graceMs >= 0)) throw new InvalidWindowError(`grace must be zero or positive, got ${w.graceMs}`, loc);
  if (!(Number.isFinite(w.advanceMs) && w.advanceMs > 0 && w.advanceMs <= w.sizeMs)) throw new InvalidWindowError(`advance must be positive and at most the size (${w.sizeMs}), got ${w.advanceMs}`, loc);
}

export const STATEFUL_STAGES: StageCompilers = {
  dedupe: (s, spec) => {
    if (!(Number.isFinite(spec.ttlMs) && spec.ttlMs > 0)) throw new InvalidStageOptionError(`dedupe ttlMs must be a positive number of milliseconds, got ${spec.ttlMs}`, s.loc(s.name));
    s.addStore(s.storeName(spec.store), 'dedupe', stringSerde as Serde<unknown>, countSerde as Serde<unknown>);
  },
  latestByVersion: (s, spec) => {
    const parent = s.parents[0]!;
    if (parent.keyless) throw new StatefulWithoutKeyError('latestByVersion', s.loc(s.name));
    const store = s.storeName(spec.store);
    const key = s.requireSerde(parent.keySerde, 'the key of latestByVersion', 'give the upstream stream a key serde (stream(topic, { key }) or selectKey(fn, { key }))');
    if (parent.keyChanged) {
      const value = s.requireSerde(parent.valueSerde, `the value of repartition topic ${s.appId}-${store}-repartition`, 'the stream lost its value serde; pass { value } to the mapValues/map/flatMap before it');
      s.node.parents = [s.repartition(parent, store, key, value)];
    }
    s.node.keyChanged = false;
    s.addStore(store, 'version', key, countSerde as Serde<unknown>);
  },
  aggregate: (s, spec) => {
    const parent = s.parents[0]!;
    const loc = s.loc(s.name);
    if (parent.keyless) throw new StatefulWithoutKeyError(spec.mode, loc);
    const w = spec.window;
    const session = spec.session;
    if (session) {
      if (!(Number.isFinite(session.inactivityGapMs) && session.inactivityGapMs > 0)) throw new InvalidWindowError(`session inactivity gap must be a positive number of milliseconds, got ${session.inactivityGapMs}`, loc);
      if (!(Number.isFinite(session.graceMs) && session.graceMs >= 0)) throw new InvalidWindowError(`grace must be zero or positive, got ${session.graceMs}`, loc);
    }
    if (w) checkWindow(w, loc);
    const store = s.storeName(spec.store);
    const key = s.requireSerde(spec.groupKeySerde, `the grouping key of ${spec.mode}`, 'pass { key } to groupBy/groupByKey or give the stream a key serde');
    const state = s.requireSerde(spec.stateSerde, `the state of ${spec.mode}`, spec.mode === 'reduce' ? 'pass reduce(fn, { state }); the stream lost its value serde' : 'pass aggregate(init, fn, { state })');
    if (parent.keyChanged) {
      const value = s.requireSerde(spec.groupValueSerde, `the value of repartition topic ${s.appId}-${store}-repartition`, 'pass { value } to groupBy/groupByKey; the stream lost its value serde at a mapValues/map/flatMap');
      s.node.parents = [s.repartition(parent, store, key, value)];
    }
    s.node.keyChanged = false;
    s.node.keyless = false;
    // A sliding window store keeps each window's latest record time beside its aggregate.
    s.addStore(store, session ? 'session' : w ? 'window' : 'key-value', key, w?.type === 'sliding' ? slidingWindowValueSerde(state) : state, session ?? w);
  },
  suppress: (s, spec) => {
    const parent = s.parents[0]!;
    const loc = s.loc(s.name);
    const b = spec.suppress;
    if (!(isTable(parent) || parent.kind === 'aggregate' || parent.kind === 'cogroup' || parent.kind === 'suppress')) throw new InvalidStageOptionError(`suppress follows a table (an aggregate, or filter/mapValues of one), not a ${parent.kind} stream`, loc);
    if (b.until === 'window-closes' && spec.window === undefined) throw new InvalidStageOptionError('Suppressed.untilWindowCloses() needs a windowed aggregate upstream (windowedBy(...) then aggregate/reduce/count)', loc);
    if (b.until === 'time-limit' && !(Number.isFinite(b.timeLimitMs) && b.timeLimitMs > 0)) throw new InvalidStageOptionError(`Suppressed.untilTimeLimit needs a positive number of milliseconds, got ${b.timeLimitMs}`, loc);
    if (!(Number.isInteger(b.maxRecords) && b.maxRecords > 0) || !(Number.isInteger(b.maxBytes) && b.maxBytes > 0)) throw new InvalidStageOptionError(`suppress buffer bounds must be positive integers, got maxRecords ${b.maxRecords}, maxBytes ${b.maxBytes}`, loc);
    const key = s.requireSerde(s.def.keySerde, 'the key of the suppression buffer', 'give the grouping a key serde (groupBy(fn, { key }) or groupByKey({ key }))');
    const value = s.requireSerde(s.def.valueSerde, 'the value of the suppression buffer', 'pass { value } to the mapValues before suppress');
    s.addStore(s.storeName(spec.store), 'suppress', key, value);
  },
  process: (s, spec) => {
    for (const p of spec.punctuations) {
      if (!(Number.isFinite(p.everyMs) && p.everyMs > 0)) throw new InvalidStageOptionError(`punctuation everyMs must be a positive number of milliseconds, got ${p.everyMs}`, s.loc(s.name));
      if (p.on !== 'stream-time' && p.on !== 'wall-clock') throw new InvalidStageOptionError(`punctuation on must be 'stream-time' or 'wall-clock', got ${String(p.on)}`, s.loc(s.name));
    }
    if (spec.state) s.addStore(s.storeName(spec.state.store), 'key-value', spec.state.keySerde, spec.state.valueSerde);
  },
};
