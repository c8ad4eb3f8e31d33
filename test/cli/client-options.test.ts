import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Command } from 'commander';
import { dlqTarget, registerDlq, type DlqOptions } from '../../src/cli/dlq.ts';
import { registerOutbox, relayOptions, type RelayOpts } from '../../src/cli/outbox.ts';
import { registerVerify, verifyClients } from '../../src/cli/verify.ts';
import { resolveConnection, type Connection } from '../../src/cli/connection.ts';
import type { OutboxRelayOptions } from '../../src/effects/outbox-relay.ts';

// No dev cluster may leak in from the checkout: the options come from the command line alone.
process.env.ONCEFLOW_HOME = mkdtempSync(join(tmpdir(), 'onceflow-client-options-'));

const KAFKA_FLAGS = ['--bootstrap', 'broker.example:9093', '--kafka', 'security.protocol=SASL_SSL', '--kafka', 'sasl.username=reader'];
const EXPECTED = { 'security.protocol': 'SASL_SSL', 'sasl.username': 'reader' };

/** Parses `args` with the real command definition, its action replaced by one that hands back the parsed options. */
async function parsedOptions<T>(register: (program: Command) => void, path: readonly string[], args: readonly string[]): Promise<T> {
  const program = new Command().exitOverride();
  register(program);
  let command = program;
  for (const name of path) command = command.commands.find((c) => c.name() === name) ?? assert.fail(`no command ${name}`);
  let parsed: T | undefined;
  command.action((...actionArgs: unknown[]) => {
    parsed = actionArgs.at(-2) as T;
  });
  await program.parseAsync([...path, ...args], { from: 'user' });
  return parsed ?? assert.fail(`${path.join(' ')} did not run`);
}

const connectionOf = (flags: Parameters<typeof resolveConnection>[0]): Connection => resolveConnection(flags, {});

for (const sub of ['list', 'replay']) {
  test(`dlq ${sub} accepts --kafka and gives the options to its admin, reader and producer`, async () => {
    const opts = await parsedOptions<DlqOptions>(registerDlq, ['dlq', sub], ['--app-id', 'shop', ...KAFKA_FLAGS]);
    const target = dlqTarget(opts, connectionOf(opts));
    assert.deepEqual(target, { bootstrap: 'broker.example:9093', dlqTopic: 'shop-dlq', clientOptions: EXPECTED });
  });
}

test('outbox relay accepts --kafka and gives the options to its producer', async () => {
  const opts = await parsedOptions<RelayOpts>(registerOutbox, ['outbox', 'relay'], ['--topic', 'events', ...KAFKA_FLAGS]);
  const pool = {} as OutboxRelayOptions['pool'];
  const relay = relayOptions(opts, connectionOf(opts), pool, 10);
  assert.equal(relay.bootstrap, 'broker.example:9093');
  assert.deepEqual(relay.producerConfig, EXPECTED);
});

test('verify accepts --kafka and gives the options to its readers', async () => {
  const opts = await parsedOptions<Parameters<typeof resolveConnection>[0]>(registerVerify, ['verify'], ['topology.ts', ...KAFKA_FLAGS]);
  assert.deepEqual(verifyClients(connectionOf(opts)), { bootstrap: 'broker.example:9093', clientOptions: EXPECTED });
});

test('ONCEFLOW_KAFKA_* reaches the same clients when no --kafka is given', async () => {
  const opts = await parsedOptions<DlqOptions>(registerDlq, ['dlq', 'list'], ['--app-id', 'shop', '--bootstrap', 'b:9092']);
  const target = dlqTarget(opts, resolveConnection(opts, { ONCEFLOW_KAFKA_SECURITY_PROTOCOL: 'SSL' }));
  assert.deepEqual(target.clientOptions, { 'security.protocol': 'SSL' });
});
