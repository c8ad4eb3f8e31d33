import { RecordSizeLimits } from '../../core/record-size.ts';
import type { SerdeUsage, TaskPlan } from '../../graph/types.ts';
import { HostedTasks } from './hosted-tasks.ts';
import { OffloadedTasks, hostableSubtopologies, offloadableSubtopologies, threadSerdeUsages, type RunResult } from './offloaded-tasks.ts';
import { transferablesOf } from './resolved-outputs.ts';
import type { FromThread, ThreadInit, ToThread } from './processing-thread.ts';

/**
 * The processing thread's side of its protocol with the worker: the topology loaded at `init`, then
 * each request's runs processed and answered. Requests are handled one at a time in the order they
 * came: a partition's runs must be processed in order.
 */
export class ThreadRequests {
  #tasks: OffloadedTasks | undefined;
  #hosted: HostedTasks | undefined;
  #queue: Promise<void> = Promise.resolve();

  constructor(
    /** The topology as the thread has it (loaded again from its file: stage functions cannot cross threads). */
    private readonly load: (init: ThreadInit) => Promise<TaskPlan & { serdeUsages(): SerdeUsage[] }>,
    private readonly reply: (message: FromThread, transfer: ArrayBuffer[]) => void,
  ) {}

  /** Queues a request; whatever it throws is answered as `failed`. */
  receive(message: ToThread): Promise<void> {
    this.#queue = this.#queue.then(() => this.#handle(message)).catch((e: unknown) => this.reply({ type: 'failed', message: errorText(e) }, []));
    return this.#queue;
  }

  async #handle(message: ToThread): Promise<void> {
    if (message.type === 'init') {
      const failure = await this.#init(message);
      if (failure !== undefined) this.reply({ type: 'failed', message: failure }, []);
      return;
    }
    // The worker sends records only after the thread said it is ready.
    if (this.#tasks === undefined || this.#hosted === undefined) {
      this.reply({ type: 'failed', message: 'records before the topology was loaded' }, []);
      return;
    }
    if (message.type === 'task') {
      const answer = await this.#hosted.handle(message.request);
      const transfer = answer.emitted === undefined ? [] : transferablesOf(answer.emitted);
      if (answer.writes !== undefined) transfer.push(answer.writes.run.bytes, answer.writes.run.fields.buffer as ArrayBuffer);
      this.reply({ type: 'task', id: message.id, answer }, transfer);
      return;
    }
    const results: RunResult[] = [];
    const transfer: ArrayBuffer[] = [];
    for (const { subtopology, run, streamTime } of message.runs) {
      const result = await this.#tasks.process(subtopology, run, streamTime);
      results.push(result);
      transfer.push(result.outputs.bytes, result.outputs.fields.buffer as ArrayBuffer);
    }
    this.reply({ type: 'processed', id: message.id, results }, transfer);
  }

  /** Loads the topology and prepares its offloaded serdes; returns why not, if it could not. */
  async #init(init: ThreadInit): Promise<string | undefined> {
    let plan: TaskPlan & { serdeUsages(): SerdeUsage[] };
    try {
      plan = await this.load(init);
    } catch (e) {
      return errorText(e);
    }
    const offloadable = offloadableSubtopologies(plan);
    const hostable = hostableSubtopologies(plan);
    // Registers or looks up the schemas as the main thread did: the same schema gets the same id.
    for (const { serde, ctx } of threadSerdeUsages(plan, [...offloadable, ...hostable])) {
      try {
        await serde.prepare?.(ctx, { registryUrl: init.registryUrl });
      } catch (e) {
        return `preparing the ${ctx.role} serde ${serde.name} of ${ctx.topic}: ${errorText(e)}`;
      }
    }
    const limits = new RecordSizeLimits(init.messageMaxBytes, init.topicMaxMessageBytes);
    this.#tasks = new OffloadedTasks(plan, limits);
    this.#hosted = new HostedTasks(plan, limits, init.cache);
    this.reply({ type: 'ready', offloadable, hostable, sourceTopics: plan.subtopologies.map((s) => s.sourceTopics) }, []);
    return undefined;
  }
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
