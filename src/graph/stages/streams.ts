// Compile steps of the stream stages that read or write a topic, or act outside the transaction.
import { retryPolicyOf, nullKeySerde, type StageCompilers } from '../stage-compile.ts';

export const STREAM_STAGES: StageCompilers = {
  source: (s, spec) => {
    s.checkTopic(spec.topic, s.name);
    s.claimSourceTopic(spec.topic);
    s.node.topic = spec.topic;
    if (!s.node.keySerde) s.node.keySerde = nullKeySerde;
  },
  sink: (s, spec) => {
    s.checkTopic(spec.topic, s.name);
    s.node.topic = spec.topic;
    const parent = s.parents[0]!;
    s.node.keySerde = s.def.keySerde ?? (parent.keyless ? nullKeySerde : s.requireSerde(s.def.keySerde, `the key of sink topic ${spec.topic}`, 'pass to(topic, { key })'));
    s.node.valueSerde = s.requireSerde(s.def.valueSerde, `the value of sink topic ${spec.topic}`, 'pass to(topic, { value }); the stream lost its value serde at a mapValues/map/flatMap');
  },
  effect: (s, spec) => {
    const policy = retryPolicyOf(s.retry, spec.retry);
    s.checkPolicy(policy, s.name);
    s.setRetryPolicy(policy);
  },
};
