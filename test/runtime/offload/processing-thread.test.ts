import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { test } from 'node:test';
import { ProcessingThread, type FromThread, type ThreadPort, type ToThread } from '../../../src/runtime/offload/processing-thread.ts';

const INIT = { file: 'topology.ts', messageMaxBytes: 1_000_000, topicMaxMessageBytes: {} };

/** A thread that answers its start with `answer` (or never), and counts terminations. */
class ScriptedThread extends EventEmitter implements ThreadPort {
  terminated = 0;
  constructor(private readonly answer: FromThread | undefined) {
    super();
  }
  postMessage(message: ToThread): void {
    if (message.type === 'init' && this.answer !== undefined) setImmediate(() => this.emit('message', this.answer));
  }
  async terminate(): Promise<number> {
    this.terminated++;
    return 0;
  }
}

test('a thread whose topology compiles to other sub-topologies is not used, and is stopped', async () => {
  const thread = new ScriptedThread({ type: 'ready', offloadable: [0], sourceTopics: [['orders']] });
  const started = await ProcessingThread.start(() => thread, INIT, [['orders-v2']]);
  assert.equal(started, 'the topology compiles differently on the processing thread');
  assert.equal(thread.terminated, 1);
});

test('a thread that cannot load the topology, or does not answer in time, is not used, and is stopped', async () => {
  const failing = new ScriptedThread({ type: 'failed', message: 'SyntaxError: Unexpected token' });
  assert.match(String(await ProcessingThread.start(() => failing, INIT, [['orders']])), /could not load the topology: SyntaxError/);
  const silent = new ScriptedThread(undefined);
  assert.equal(await ProcessingThread.start(() => silent, INIT, [['orders']], 20), 'the processing thread did not load the topology within 20 ms');
  assert.deepEqual([failing.terminated, silent.terminated], [1, 1]);
});

test('a topology with no sub-topology the thread can run leaves it unused', async () => {
  const thread = new ScriptedThread({ type: 'ready', offloadable: [], sourceTopics: [['orders']] });
  assert.equal(await ProcessingThread.start(() => thread, INIT, [['orders']]), 'no sub-topology of this topology can run on the processing thread');
});

test('requests in flight when the thread dies resolve to undefined; later ones too, without being posted', async () => {
  const thread = new ScriptedThread({ type: 'ready', offloadable: [0], sourceTopics: [['orders']] });
  const started = await ProcessingThread.start(() => thread, INIT, [['orders']]);
  assert.ok(started instanceof ProcessingThread);
  // The start's own listeners are gone: only the running thread's remain.
  assert.deepEqual(['message', 'error', 'exit'].map((event) => thread.listenerCount(event)), [1, 1, 1]);
  const run = { topic: 'orders', partition: 0, count: 0, fields: new Float64Array(0), bytes: new ArrayBuffer(0), headers: undefined, lineages: undefined };
  const inFlight = started.process([{ subtopology: 0, run, streamTime: 0 }]);
  thread.emit('exit', 1);
  assert.equal(await inFlight, undefined);
  assert.equal(started.alive, false);
  assert.equal(started.failure, 'the processing thread exited (1)');
  assert.equal(await started.process([{ subtopology: 0, run: { ...run, fields: new Float64Array(0), bytes: new ArrayBuffer(0) }, streamTime: 0 }]), undefined);
});
