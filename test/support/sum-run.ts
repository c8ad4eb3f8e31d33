import { compile } from '../../src/graph/compile.ts';
import { loadTopology } from '../../src/dsl/load.ts';
import { withAdmin } from '../../src/kafka/admin.ts';
import { produceRecords } from '../../src/kafka/produce-records.ts';
import { readTopic } from '../../src/kafka/read-topic.ts';
import { prng, produceAll, type InputRecord } from '../../src/verify/orders-input.ts';
import { waitCaughtUp } from '../../src/verify/progress.ts';
import { WorkerProcess } from '../../src/verify/worker-process.ts';
import { createTopics, testCluster, uniqueName } from './cluster.ts';

export const DAY_MS = 24 * 3_600_000;
const FIXTURE = 'test/fixtures/sum-by-field.ts';

/** One run of test/fixtures/sum-by-field.ts (groupBy → repartition → sum) on its own topics, replicas as real processes. */
export class SumRun {
  readonly bootstrap = testCluster().bootstrap;
  readonly appId = uniqueName('sum');
  readonly input = uniqueName('sum-in');
  readonly output = uniqueName('sum-out');
  readonly workers: WorkerProcess[] = [];
  /** Every record produced so far, for the expected sums. */
  readonly produced: InputRecord[] = [];

  constructor(
    readonly partitions: number,
    readonly fixture = FIXTURE,
  ) {}

  /** Both keep everything, as a backfill's own topics must: the broker trims them by the records' (old) timestamps too (docs/operations.md). */
  async createTopics(): Promise<void> {
    await createTopics(this.bootstrap, [
      { name: this.input, partitions: this.partitions, config: { 'retention.ms': '-1' } },
      { name: this.output, partitions: this.partitions, config: { 'retention.ms': '-1' } },
    ]);
  }

  async internalTopics(): Promise<{ repartition: string; changelog: string; deadLetter: string }> {
    const compiled = compile(await loadTopology(this.fixture), { appId: this.appId });
    const named = (kind: string) => compiled.topics.find((t) => t.kind === kind)!.name;
    return { repartition: named('repartition'), changelog: named('changelog'), deadLetter: compiled.deadLetterTopic };
  }

  /** `records` amounts over `keys` keys, stamped `ageMs` before now. */
  async produce(records: number, keys: number, seed: number, ageMs: number): Promise<void> {
    const rand = prng(seed);
    const batch = Array.from({ length: records }, (_, i) => {
      const key = `k${Math.floor(rand() * keys)}`;
      return { key: `e${this.produced.length + i}`, value: JSON.stringify({ key, amount: 1 + Math.floor(rand() * 100) }) };
    });
    await produceAll(this.bootstrap, this.input, batch, {}, ageMs);
    this.produced.push(...batch);
  }

  /** Records each with its own timestamp, in the order given (each partition then holds them in that order). */
  async produceStamped(records: readonly (InputRecord & { readonly timestamp: number })[]): Promise<void> {
    await produceRecords(this.bootstrap, this.input, records.map((r) => ({ key: Buffer.from(r.key), value: Buffer.from(r.value), timestamp: r.timestamp })));
    this.produced.push(...records);
  }

  startWorker(instance: string, env: Record<string, string> = {}): WorkerProcess {
    const w = new WorkerProcess(instance, this.fixture, ['--app-id', this.appId, '--instance-id', instance], { ONCEFLOW_BOOTSTRAP: this.bootstrap, SUM_INPUT: this.input, SUM_OUTPUT: this.output, ...env });
    this.workers.push(w);
    return w;
  }

  async caughtUp(): Promise<void> {
    const { repartition } = await this.internalTopics();
    try {
      await waitCaughtUp({ bootstrap: this.bootstrap, groupId: this.appId, plainTopics: [this.input], transactionalTopics: [repartition], timeoutMs: 240_000 });
    } catch (e) {
      // What the workers said is what explains a run that did not finish.
      const said = this.workers.map((w) => `${w.name} (alive ${w.alive}): events ${w.events.slice(-8).map((ev) => JSON.stringify(ev)).join(' ')}; stderr ${w.stderr.slice(-8).join(' | ')}`);
      throw new Error(`${(e as Error).message}\n${said.join('\n')}`, { cause: e });
    }
  }

  expectedSums(): Map<string, number> {
    const sums = new Map<string, number>();
    for (const r of this.produced) {
      const { key, amount } = JSON.parse(r.value) as { key: string; amount: number };
      sums.set(key, (sums.get(key) ?? 0) + amount);
    }
    return sums;
  }

  /** The last committed sum of each key in the output. */
  async outputSums(): Promise<Map<string, number>> {
    const sums = new Map<string, number>();
    for (const r of (await readTopic(this.bootstrap, this.output)).sort((a, b) => a.partition - b.partition || a.offset - b.offset)) sums.set(r.key!.toString(), Number(r.value!.toString()));
    return sums;
  }

  /** Low watermark (log start offset) and high watermark of each partition of `topic`. */
  async watermarks(topic: string): Promise<{ partition: number; low: number; high: number }[]> {
    return withAdmin(this.bootstrap, async (admin) => (await admin.fetchTopicOffsets(topic)).map((p) => ({ partition: p.partition, low: Number(p.low), high: Number(p.high) })));
  }

  async stop(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.stop()));
  }
}
