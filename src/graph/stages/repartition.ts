// Compile step of stream.repartition(): the records go through an internal topic, which cuts the
// topology there; what follows reads that topic in a sub-topology of its own.
import { InvalidStageOptionError } from '../errors.ts';
import { nullKeySerde, type StageCompilers } from '../stage-compile.ts';

export const REPARTITION_STAGES: StageCompilers = {
  repartition: (s, spec) => {
    const parent = s.parents[0]!;
    const partitions = spec.partitions;
    if (partitions !== undefined && !(Number.isInteger(partitions) && partitions > 0)) throw new InvalidStageOptionError(`repartition partitions must be a positive integer, got ${partitions}`, s.loc(s.name));
    const topic = `${s.appId}-${s.name}-repartition`;
    // A keyless stream's records spread over the partitions, as Kafka Streams' round-robin does.
    const key = parent.keyless ? nullKeySerde : s.requireSerde(s.def.keySerde, `the key of repartition topic ${topic}`, 'pass repartition({ key }); the stream lost its key serde at a map/selectKey/flatMap');
    const value = s.requireSerde(s.def.valueSerde, `the value of repartition topic ${topic}`, 'pass repartition({ value }); the stream lost its value serde at a mapValues/map/flatMap');
    s.node.parents = [s.repartition(parent, s.name, key, value, partitions)];
    s.node.keyChanged = false;
  },
};
