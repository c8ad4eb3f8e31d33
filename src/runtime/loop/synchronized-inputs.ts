import type { KafkaConsumer } from '@confluentinc/kafka-javascript';
import type { SynchronizedInputs } from './input-synchronizer.ts';
import { parsePartitionKey, partitionKey, type PartitionProgress } from '../base/partition-progress.ts';
import type { TaskManager } from '../task/task-manager.ts';
import type { RuntimeTask, RuntimeTopology } from '../task/worker-topology.ts';

/**
 * The worker's answers to the input synchronizer: which owned partitions belong to a task that must
 * take its inputs in timestamp order, and how far each is behind its end.
 */
export function synchronizedInputs(topology: RuntimeTopology, tasks: TaskManager, progress: PartitionProgress, consumer: () => KafkaConsumer | undefined): SynchronizedInputs {
  const several = new Set(topology.subtopologies.filter((s) => s.sourceTopics.length > 1).map((s) => s.id));
  // One array per task, so that the synchronizer can tell its tasks apart by identity.
  const inputsByTask = new WeakMap<RuntimeTask, readonly string[]>();
  const taskIds = new WeakMap<readonly string[], string>();
  return {
    inputsOf(key) {
      if (several.size === 0) return undefined;
      const task = tasks.taskFor(key);
      // A stateless task's outputs do not depend on the order of its inputs' records: it is not held back.
      if (task === undefined || task.stateless === true || task.subtopology === undefined || !several.has(task.subtopology)) return undefined;
      let inputs = inputsByTask.get(task);
      if (inputs === undefined) {
        const { partition } = parsePartitionKey(key);
        const sub = topology.subtopologies.find((s) => s.id === task.subtopology);
        inputs = (sub?.sourceTopics ?? []).map((topic) => partitionKey(topic, partition)).filter((k) => tasks.owns(k));
        inputsByTask.set(task, inputs);
        taskIds.set(inputs, `${task.subtopology}_${partition}`);
      }
      return inputs.length > 1 ? inputs : undefined;
    },
    taskOf: (inputs) => taskIds.get(inputs) ?? inputs[0] ?? '?',
    lag(key) {
      const client = consumer();
      if (client === undefined) return undefined;
      const { topic, partition } = parsePartitionKey(key);
      let end: number;
      let position: number | undefined;
      try {
        // Cached from the last fetch response: under read_committed the last stable offset.
        end = client.getWatermarkOffsets(topic, partition).highOffset;
        position = client.position([{ topic, partition }])[0]?.offset;
      } catch {
        return undefined;
      }
      if (!(end >= 0)) return undefined;
      // Nothing delivered since the partition was assigned or sought: it is read from its committed offset.
      const next = position !== undefined && position >= 0 ? position : progress.committed.get(key);
      if (next === undefined) return end === 0 ? 0 : undefined;
      return Math.max(0, end - next);
    },
    positionMoves: (key) => progress.positionMoves(key),
    pause: (key) => consumer()?.pause([parsePartitionKey(key)]),
    resume(key) {
      try {
        consumer()?.resume([parsePartitionKey(key)]);
      } catch {
        // No longer assigned: a new assignment fetches it anyway.
      }
    },
  };
}
