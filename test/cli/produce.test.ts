import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { projectRoot } from '../../src/kafka/paths.ts';
import { readTopic, type IsolationLevel } from '../../src/kafka/read-topic.ts';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';

// `onceflow produce` as a user runs it: a file, the CLI, the topic read back as a read_committed reader sees it.
const { bootstrap, registryUrl } = testCluster();
const dir = mkdtempSync(join(tmpdir(), 'onceflow-produce-'));
const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, ONCEFLOW_BOOTSTRAP: bootstrap, ONCEFLOW_REGISTRY_URL: registryUrl, ONCEFLOW_HOME: dir };
after(() => rmSync(dir, { recursive: true, force: true }));

function produce(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'produce', ...args], { cwd: projectRoot(), env, timeout: 180_000, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

function file(name: string, lines: readonly string[]): string {
  const path = join(dir, name);
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

const read = (topic: string, isolation: IsolationLevel = 'read_committed') => readTopic(bootstrap, topic, { isolation, idleMs: 20_000 });

/** A JSON-lines file whose 2nd line is a 2 MB record (a JSON string of 2,097,152 characters and its quotes). */
const withLargeSecondLine = (name: string): string => file(name, [JSON.stringify({ n: 1 }), JSON.stringify('x'.repeat(2 * 1024 * 1024)), JSON.stringify({ n: 3 })]);

test('a 2 MB record on line 2 writes nothing: RECORD_TOO_LARGE names line 2 and the producer\'s limit, or with that raised, the topic\'s', async () => {
  const topic = uniqueName('produce-big');
  await createTopics(bootstrap, [{ name: topic, partitions: 1 }]);
  const input = withLargeSecondLine('large.jsonl');

  const byProducer = await produce(topic, input);
  assert.equal(byProducer.code, 1, byProducer.stderr);
  assert.match(byProducer.stderr, /^onceflow: error \[RECORD_TOO_LARGE\]: line 2: 2,097,154 bytes, over the producer's message\.max\.bytes 1,000,000 .*--max-message-bytes.*Nothing was written$/m);
  assert.doesNotMatch(byProducer.stderr, /\n\s+at /, 'no stack trace');

  const byTopic = await produce(topic, input, '--max-message-bytes', '3000000');
  assert.equal(byTopic.code, 1, byTopic.stderr);
  assert.match(byTopic.stderr, new RegExp(`\\[RECORD_TOO_LARGE\\]: line 2: 2,097,154 bytes, over max\\.message\\.bytes 1,048,588 of topic ${topic} `));

  assert.equal((await read(topic)).length, 0, 'read_committed: 0 records');
  assert.equal((await read(topic, 'read_uncommitted')).length, 0, 'not even an aborted one: nothing was sent');
});

test('with the limits raised, every line of the file with a 2 MB record is written exactly once, in order', async () => {
  const topic = uniqueName('produce-roomy');
  await createTopics(bootstrap, [{ name: topic, partitions: 1, config: { 'max.message.bytes': '3000000' } }]);
  const r = await produce(topic, withLargeSecondLine('roomy.jsonl'), '--max-message-bytes', '3000000');
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /produced 3 record\(s\)/);
  const records = await read(topic);
  assert.deepEqual(records.map((m) => m.value?.length), [7, 2 * 1024 * 1024 + 2, 7]);
});

test('a file of valid keyed lines is written exactly once; a bad line anywhere writes none of it', async () => {
  const topic = uniqueName('produce-lines');
  await createTopics(bootstrap, [{ name: topic, partitions: 3 }]);
  const lines = Array.from({ length: 500 }, (_, i) => JSON.stringify({ id: `k${i}`, n: i }));
  const r = await produce(topic, file('valid.jsonl', lines), '--key-field', 'id');
  assert.equal(r.code, 0, r.stderr);
  const written = await read(topic);
  assert.deepEqual(written.map((m) => m.key?.toString()).sort(), lines.map((_, i) => `k${i}`).sort(), 'each line once');

  const bad = await produce(topic, file('bad.jsonl', [...lines.slice(0, 399), '{"id": "k399", "n":', ...lines.slice(400)]), '--key-field', 'id');
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /\[PRODUCE_INPUT_INVALID\]: line 400: not JSON/);
  const noKey = await produce(topic, file('no-key.jsonl', [...lines.slice(0, 9), JSON.stringify({ n: 9 })]), '--key-field', 'id');
  assert.equal(noKey.code, 1);
  assert.match(noKey.stderr, /\[PRODUCE_INPUT_INVALID\]: line 10: no field "id" for the key/);
  assert.equal((await read(topic, 'read_uncommitted')).length, 500, 'nothing more was sent');
});

test('a record the broker refuses aborts the transaction: PRODUCE_ABORTED says so, and read_committed readers see none of the file', async () => {
  // A compacted topic refuses a record without a key (INVALID_RECORD): line 1 reaches the log, line 2 fails the transaction.
  const topic = uniqueName('produce-abort');
  await createTopics(bootstrap, [{ name: topic, partitions: 1, compact: true }]);
  const r = await produce(topic, file('keyless.jsonl', [JSON.stringify({ key: 'a', value: 1 }), JSON.stringify({ key: null, value: 2 })]), '--keyed');
  assert.equal(r.code, 1, r.stdout);
  assert.match(r.stderr, /^onceflow: error \[PRODUCE_ABORTED\]: the transaction was aborted, none of the 2 records was written to /m);
  assert.equal((await read(topic)).length, 0, 'read_committed: 0 records');
});
