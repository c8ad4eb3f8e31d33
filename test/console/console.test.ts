/**
 * The console in a real browser (issue #24): Debian's Chromium, installed by scripts/setup.sh, driven
 * headless by playwright-core. Two workers run topology/payments.ts (an effect stage outside the
 * transaction, charging a local HTTP endpoint); the console runs as users start it, `onceflow console`.
 */
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type { Page } from 'playwright-core';
import { describeJson } from '../../src/cli/describe.ts';
import { topologyGraph } from '../../src/console/topology-graph.ts';
import { loadTopology } from '../../src/dsl/load.ts';
import { compile } from '../../src/graph/compile.ts';
import { produceRecords } from '../../src/kafka/produce-records.ts';
import { projectRoot } from '../../src/kafka/paths.ts';
import { eventually, WorkerProcess } from '../../src/verify/worker-process.ts';
import { createTopics, testCluster, uniqueName } from '../support/cluster.ts';
import { openBrowser, requireChromium, SCREENSHOTS, startConsole } from '../support/console-browser.ts';
import { freePort } from '../support/ports.ts';

const TOPOLOGY = 'topology/payments.ts';

const cleanups: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

/** The charge endpoint the effect calls: answers every debit with 201. */
async function chargeEndpoint(): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(201).end('{"charged":true}'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/charges`, server };
}

const debit = (i: number): { key: Buffer; value: Buffer } => ({
  key: Buffer.from(`account-${i % 7}`),
  value: Buffer.from(JSON.stringify({ eventId: `e-${i}-${Date.now()}`, account: `account-${i % 7}`, amount: 1, seq: i })),
});

async function text(page: Page, selector: string): Promise<string> {
  return (await page.locator(selector).first().textContent({ timeout: 5_000 }))?.trim() ?? '';
}

test('the console shows the topology, both members, committed offsets moving and a dead-letter alert', { timeout: 240_000 }, async () => {
  // Fails, not skips: setup installs Chromium, and a console nobody can open is not tested.
  requireChromium();
  const { bootstrap } = testCluster();
  const appId = uniqueName('console');
  const input = `${appId}-in`;
  const output = `${appId}-out`;
  await createTopics(bootstrap, [{ name: input, partitions: 2 }, { name: output, partitions: 2 }]);
  const charges = await chargeEndpoint();
  cleanups.push(() => new Promise((resolve) => charges.server.close(resolve)));
  const env = { ONCEFLOW_BOOTSTRAP: bootstrap, ONCEFLOW_PAYMENTS_MODE: 'key-http', ONCEFLOW_PAYMENTS_URL: charges.url, ONCEFLOW_PAYMENTS_INPUT: input, ONCEFLOW_PAYMENTS_OUTPUT: output };

  // What the page must draw, from the same compiled description `describe --json` prints.
  Object.assign(process.env, env);
  const expected = topologyGraph(describeJson(compile(await loadTopology(join(projectRoot(), TOPOLOGY)), { appId })));
  const effect = expected.nodes.find((n) => n.kind === 'stage' && n.boundary === 'external');
  assert.ok(effect, 'payments has an effect stage');

  const ports = [await freePort(), await freePort()];
  const workers = ['a', 'b'].map((instance, i) => new WorkerProcess(`worker-${instance}`, TOPOLOGY, ['--app-id', appId, '--instance-id', instance, '--http-port', String(ports[i])], env));
  for (const w of workers) cleanups.push(() => w.stop());
  await Promise.all(workers.map((w) => w.waitFor((e) => e.type === 'started', 90_000, 'start')));

  const consoleArgs = [TOPOLOGY, '--app-id', appId, '--port', '0', '--refresh-ms', '500', '--no-typecheck', ...ports.flatMap((p) => ['--worker-url', `http://127.0.0.1:${p}/metrics`])];
  const consoleProcess = await startConsole(consoleArgs, env);
  const url = consoleProcess.url;
  cleanups.push(() => consoleProcess.stop());

  const opened = await openBrowser({ width: 1400, height: 1100 });
  const browser = opened.browser;
  cleanups.push(() => opened.close());
  const page = browser.pages()[0] ?? (await browser.newPage());
  const pageErrors: string[] = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));
  await page.goto(url);

  // The graph: every node of the compiled topology, the effect drawn outside the transaction with its key.
  await page.locator('#graph svg .node').first().waitFor({ timeout: 30_000 });
  const drawn = await page.locator('#graph svg .node').evaluateAll((nodes) => nodes.map((n) => n.getAttribute('data-node-id')));
  assert.deepEqual([...drawn].sort(), expected.nodes.map((n) => n.id).sort(), 'one drawn node per node of the topology');
  const effectNode = page.locator(`#graph .node[data-node-id="${effect.id}"]`);
  assert.equal(await effectNode.getAttribute('data-boundary'), 'external');
  assert.match((await effectNode.getAttribute('class')) ?? '', /outside-txn/);
  assert.match(await effectNode.textContent() ?? '', /key: .*eventId/);
  assert.equal(await page.locator('#graph .node.outside-txn').count(), 1, 'only the effect is outside the transaction');
  await effectNode.click();
  assert.match(await text(page, '#details'), /outside the transaction: at-least-once/);

  // Both members, each with its own numbers from its /metrics.
  await eventually(async () => (await page.locator('#members tbody tr[data-reachable="true"]').count()) === 2, 90_000, 'both members listed with their metrics');
  const listed = await page.locator('#members tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-client-id')));
  assert.deepEqual([...listed].sort(), [`${appId}-a`, `${appId}-b`]);

  // Records flow: the committed offset of partition 0 grows between two looks.
  let produced = 0;
  const produceSome = async (): Promise<void> => {
    await produceRecords(bootstrap, input, Array.from({ length: 20 }, () => ({ ...debit(produced++), partition: 0 })));
  };
  await produceSome();
  const row = `#partitions tr[data-partition="${input}-0"]`;
  const committedNow = async (): Promise<number> => {
    const cell = page.locator(`${row} .committed`);
    return (await cell.count()) === 0 ? Number.NaN : Number(await text(page, `${row} .committed`));
  };
  await eventually(async () => (await committedNow()) > 0, 90_000, `a committed offset on ${input}-0`);
  const first = await committedNow();
  await eventually(async () => {
    await produceSome();
    return (await committedNow()) > first;
  }, 90_000, `the committed offset of ${input}-0 to grow past ${first}`);

  // A poison record: the page raises the dead-letter alert.
  assert.equal(await page.locator('#dlq-alert').isVisible(), false, 'no alert before a dead letter');
  await produceRecords(bootstrap, input, [{ key: Buffer.from('poison'), value: Buffer.from('{not json'), partition: 1 }]);
  await page.locator('#dlq-alert').waitFor({ state: 'visible', timeout: 90_000 });
  const alert = await text(page, '#dlq-alert-text');
  assert.match(alert, /1 new dead letter/);
  assert.match(alert, new RegExp(`source ${input}/1/`));

  mkdirSync(SCREENSHOTS, { recursive: true });
  const shot = join(SCREENSHOTS, 'console.png');
  await page.screenshot({ path: shot, fullPage: true });
  const last = await committedNow();
  console.log(`console screenshot: ${shot}; committed offset of ${input}-0 went ${first} -> ${last}; alert: ${alert}`);

  // One replica gone: its /metrics is unreachable and the page says so; the other takes its partitions.
  const [workerA, workerB] = workers as [WorkerProcess, WorkerProcess];
  await workerB.stop();
  await page.locator('#problems li', { hasText: `http://127.0.0.1:${ports[1]}/metrics unreachable` }).first().waitFor({ timeout: 60_000 });
  await eventually(async () => (await page.locator('#members tbody tr').count()) === 1, 60_000, 'the group down to one member');
  // No worker at all: the group is empty and the committed offsets are still shown.
  await workerA.stop();
  await page.locator('#members-empty').waitFor({ state: 'visible', timeout: 60_000 });
  assert.ok((await committedNow()) >= last, 'the last committed offset is still shown with no worker running');
  await page.screenshot({ path: join(SCREENSHOTS, 'console-no-workers.png'), fullPage: true });
  assert.deepEqual(pageErrors, [], 'no script error on the page');
});
