import assert from 'node:assert/strict';
import { test } from 'node:test';
import { attachLogging, createLogger, formatPretty, type LogLevel } from '../../src/observability/logger.ts';
import { parseWorkerConfig, ConfigError } from '../../src/runtime/base/config.ts';
import { FakeWorker } from './fake-worker.ts';

const PASSWORD = 'Sup3r-S3cret-pw!';
const JAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required username="svc" password="${PASSWORD}";`;

function capture(level: LogLevel = 'info', pretty = false) {
  const lines: string[] = [];
  const logger = createLogger({ level, pretty, destination: { write: (l: string) => lines.push(l) } });
  return { lines, logger, json: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

function lifecycle(w: FakeWorker): void {
  w.send({ type: 'started', transactionalId: w.transactionalId });
  w.send({ type: 'restored', records: 42, ms: 9 });
  w.send({ type: 'assigned', partitions: ['orders-0', 'orders-1'] });
  for (let i = 0; i < 5; i++) w.send({ type: 'committed', records: 100, ms: 4 });
  w.send({ type: 'aborted', reason: 'transaction aborted: broker said so' });
  w.send({ type: 'fenced', reason: 'producer fenced' });
  w.send({ type: 'revoked', partitions: ['orders-1'], lost: false });
  w.send({ type: 'stopped' });
}

test('one JSON line per lifecycle event, each with app, instance and transactional id; commits not at info', () => {
  const w = new FakeWorker({ appId: 'orders', instanceId: 'orders-7' });
  const { json, logger } = capture('info');
  const att = attachLogging(w, logger);
  lifecycle(w);
  att.detach();
  const recs = json();
  assert.deepEqual(recs.map((r) => r.event), ['started', 'restored', 'assigned', 'aborted', 'fenced', 'revoked', 'stopped']);
  for (const r of recs) {
    assert.equal(r.app, 'orders');
    assert.equal(r.instance, 'orders-7');
    assert.equal(r.transactionalId, 'orders-orders-7');
    assert.equal(typeof r.time, 'string');
  }
  assert.deepEqual(recs.map((r) => r.level), ['info', 'info', 'info', 'warn', 'warn', 'info', 'info']);
  assert.deepEqual(recs[2]?.partitions, ['orders-0', 'orders-1']);
});

test('at debug, each commit and each dead-lettered record gets a line', () => {
  const w = new FakeWorker();
  const { json, logger } = capture('debug');
  const att = attachLogging(w, logger);
  lifecycle(w);
  w.send({ type: 'dead-lettered', stage: 'parse', code: 'DESERIALIZE_FAILED', topic: 'orders', partition: 0, offset: 3 });
  att.detach();
  const recs = json();
  assert.equal(recs.filter((r) => r.event === 'committed').length, 5);
  assert.equal(recs.filter((r) => r.event === 'committed' && r.level === 'debug').length, 5);
  assert.equal(recs.filter((r) => r.event === 'dead-lettered' && r.level === 'debug' && r.offset === 3).length, 1);
});

test('a dead-letter burst is one warn line now and one summary later, not a line per record at info', () => {
  const w = new FakeWorker();
  const { json, logger } = capture('info');
  const att = attachLogging(w, logger, { dlqSummaryMs: 3_600_000 });
  for (let i = 0; i < 50; i++) w.send({ type: 'dead-lettered', stage: 'parse', code: 'DESERIALIZE_FAILED', topic: 'orders', partition: 0, offset: i });
  w.send({ type: 'dead-lettered', stage: 'enrich', code: 'HANDLER_THREW', topic: 'orders', partition: 0, offset: 50 });
  assert.equal(json().length, 1, 'the first record is reported at once');
  att.flush();
  const recs = json();
  assert.equal(recs.length, 2);
  assert.equal(recs[0]?.records, 1);
  assert.equal(recs[1]?.level, 'warn');
  assert.equal(recs[1]?.records, 50);
  assert.deepEqual(recs[1]?.byStageAndCode, { 'parse/DESERIALIZE_FAILED': 49, 'enrich/HANDLER_THREW': 1 });
  att.detach();
});

test('late records are one warn line per store now and one summary later, naming the store and how late', () => {
  const w = new FakeWorker();
  const { json, logger } = capture('info');
  const att = attachLogging(w, logger, { dlqSummaryMs: 3_600_000 });
  const late = (offset: number, lateByMs: number) => ({ type: 'late-record', stage: 'KSTREAM-AGGREGATE-0000000004', store: 'clicks-per-minute', lateByMs, topic: 'clicks', partition: 1, offset }) as const;
  w.send(late(0, 500));
  for (let i = 1; i <= 20; i++) w.send(late(i, 1000 * i));
  assert.equal(json().length, 1, 'the first late record is reported at once');
  att.flush();
  const recs = json();
  assert.equal(recs.length, 2);
  for (const r of recs) {
    assert.equal(r.level, 'warn');
    assert.equal(r.event, 'late-record');
    assert.equal(r.store, 'clicks-per-minute');
    assert.match(String(r.msg), /clicks-per-minute/);
  }
  assert.equal(recs[0]?.maxLateByMs, 500);
  assert.equal(recs[1]?.records, 20);
  assert.equal(recs[1]?.maxLateByMs, 20_000);
  att.detach();
});

test('a password in the config appears in no log line, in JSON or pretty mode, and in no config error message', () => {
  for (const pretty of [false, true]) {
    const w = new FakeWorker({ kafka: { 'security.protocol': 'SASL_SSL', 'sasl.username': 'svc', 'sasl.password': PASSWORD, 'sasl.jaas.config': JAAS, 'ssl.key.password': `${PASSWORD}-key` } });
    const { lines, logger } = capture('trace', pretty);
    const att = attachLogging(w, logger);
    lifecycle(w);
    // Free text that quotes the secret: the key-based redaction cannot see it, the scrub must.
    att.logger.error({ err: new Error(`SASL authentication failed using password ${PASSWORD}`) }, `login with ${PASSWORD} failed`);
    att.logger.info({ nested: { client: { 'sasl.password': PASSWORD } } }, 'nested');
    att.detach();
    const all = lines.join('');
    assert.ok(lines.length >= 8);
    assert.ok(!all.includes(PASSWORD), `password leaked (pretty=${pretty})`);
    assert.ok(!all.includes('Sup3r'), 'no fragment of it either');
    // The non-secret options are still there, so redaction is targeted.
    assert.match(all, /sasl\.username/);
    assert.match(all, /SASL_SSL/);
  }
  // The schema's error names the field, never the value; the secret is in the same input.
  assert.throws(
    () => parseWorkerConfig({ bootstrap: 'b:9092', appId: 'bad app id', kafka: { 'sasl.password': PASSWORD, 'group.id': PASSWORD } }),
    (e: unknown) => e instanceof ConfigError && !e.message.includes(PASSWORD) && /appId/.test(e.message) && /kafka\.group\.id/.test(e.message),
  );
});

test('pretty mode is one readable line per record, with the error code and message', () => {
  const line = formatPretty(`${JSON.stringify({ level: 'warn', time: '2025-01-02T03:04:05.678Z', msg: 'producer fenced', event: 'fenced', app: 'orders', reason: 'epoch bumped', err: { code: 'X1', message: 'boom', stack: 'Error: boom\n    at f (a.ts:1:1)' } })}\n`);
  const [first, second] = line.split('\n');
  assert.equal(first, '03:04:05.678 WARN  producer fenced  event=fenced app=orders reason="epoch bumped" err=[X1] boom');
  assert.equal(second, '    at f (a.ts:1:1)');
  assert.equal(formatPretty('not json\n'), 'not json\n');
});
