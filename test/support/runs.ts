import { ensureTopics, withAdmin, type ClientOptions } from '../../src/kafka/admin.ts';
import { compile } from '../../src/graph/compile.ts';
import { loadTopology } from '../../src/dsl/load.ts';
import { pipelines, type PipelineName } from '../../src/verify/pipelines.ts';
import { produceAll } from '../../src/verify/orders-input.ts';
import { waitCaughtUp } from '../../src/verify/progress.ts';
import { verify, type VerifyReport } from '../../src/verify/verify.ts';
import { WorkerProcess } from '../../src/verify/worker-process.ts';
import { testCluster, uniqueName } from './cluster.ts';

/** One application run in a test: its own topics and app id, replicas as real processes. */
/** A cluster other than the one `npm test` started (a secure one): where it is and the admin's client options. */
export interface RunCluster {
  readonly bootstrap: string;
  readonly clientOptions: ClientOptions;
}

export class TestRun {
  readonly bootstrap: string;
  readonly clientOptions: ClientOptions;
  readonly appId: string;
  readonly input: string;
  readonly output: string;
  readonly workers: WorkerProcess[] = [];
  readonly pipeline;

  constructor(
    pipelineName: PipelineName,
    readonly partitions: number,
    readonly extraEnv: Record<string, string> = {},
    cluster: RunCluster = { bootstrap: testCluster().bootstrap, clientOptions: {} },
  ) {
    this.bootstrap = cluster.bootstrap;
    this.clientOptions = cluster.clientOptions;
    this.pipeline = pipelines[pipelineName];
    this.appId = uniqueName(`app-${pipelineName}`);
    this.input = uniqueName('in');
    this.output = uniqueName('out');
  }

  get env(): Record<string, string> {
    return { ...this.pipeline.env(this.input, this.output), ONCEFLOW_BOOTSTRAP: this.bootstrap, ...this.extraEnv };
  }

  async createTopics(): Promise<void> {
    await withAdmin(this.bootstrap, (a) => ensureTopics(a, [{ name: this.input, partitions: this.partitions }, { name: this.output, partitions: this.partitions }]), this.clientOptions);
  }

  async produce(records: number, seed: number, poison = 0): Promise<void> {
    await produceAll(this.bootstrap, this.input, this.pipeline.input({ records, seed, poison }), this.clientOptions);
  }

  /** The same input, in `slices` batches `pauseMs` apart: workers are busy (and mid-transaction) while a fault lands. */
  async produceOverTime(records: number, seed: number, slices: number, pauseMs: number): Promise<void> {
    const all = this.pipeline.input({ records, seed, poison: 0 });
    for (let s = 0; s < slices; s++) {
      await produceAll(this.bootstrap, this.input, all.slice(Math.floor((s * all.length) / slices), Math.floor(((s + 1) * all.length) / slices)), this.clientOptions);
      await new Promise((r) => setTimeout(r, pauseMs));
    }
  }

  startWorker(instance: string, opts: { guarantee?: string; env?: Record<string, string> } = {}): WorkerProcess {
    const w = new WorkerProcess(instance, this.pipeline.file, ['--app-id', this.appId, '--instance-id', instance, '--guarantee', opts.guarantee ?? 'exactly_once'], { ...this.env, ...opts.env });
    this.workers.push(w);
    return w;
  }

  async internalTopics(): Promise<{ repartition: string[]; deadLetter: string }> {
    const compiled = compile(await loadTopology(this.pipeline.file), { appId: this.appId });
    return { repartition: compiled.topics.filter((t) => t.kind === 'repartition').map((t) => t.name), deadLetter: compiled.deadLetterTopic };
  }

  // Generous: on 2 shared cores a busy suite can slow one run several times over; a stuck run still fails.
  async caughtUp(timeoutMs = 240_000): Promise<void> {
    const { repartition } = await this.internalTopics();
    await waitCaughtUp({ bootstrap: this.bootstrap, groupId: this.appId, plainTopics: [this.input], transactionalTopics: repartition, timeoutMs, clientOptions: this.clientOptions });
  }

  async verify(countUncommitted = false): Promise<VerifyReport> {
    const { repartition, deadLetter } = await this.internalTopics();
    return verify({
      bootstrap: this.bootstrap,
      inputTopic: this.input,
      lineageTopics: [...repartition, this.output],
      resultTopic: this.output,
      deadLetterTopic: deadLetter,
      model: this.pipeline.model,
      countUncommitted,
      clientOptions: this.clientOptions,
    });
  }

  async stopAll(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.stop(15_000)));
  }
}
