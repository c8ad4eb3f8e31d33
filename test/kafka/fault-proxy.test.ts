import assert from 'node:assert/strict';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { FaultProxy } from '../../src/kafka/fault-proxy.ts';

/** A Kafka-shaped request frame: size, api key, version, correlation id, client id, then a body. */
function request(clientId: string, body: string): Buffer {
  const id = Buffer.from(clientId);
  const rest = Buffer.concat([Buffer.alloc(8), Buffer.from([id.length >> 8, id.length & 0xff]), id, Buffer.from(body)]);
  const size = Buffer.alloc(4);
  size.writeInt32BE(rest.length);
  return Buffer.concat([size, rest]);
}

let echo: Server;
let echoPort = 0;
before(async () => {
  echo = createServer((socket) => socket.pipe(socket));
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  echoPort = (echo.address() as { port: number }).port;
});
after(async () => {
  await new Promise<void>((resolve) => echo.close(() => resolve()));
});

/** A client that records when each byte came back. */
async function client(port: number): Promise<{ socket: Socket; received: () => string; waitFor: (text: string, timeoutMs: number) => Promise<number> }> {
  const socket = connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  let got = '';
  socket.on('data', (chunk: Buffer) => (got += chunk.toString('latin1')));
  const waitFor = async (text: string, timeoutMs: number): Promise<number> => {
    const started = Date.now();
    while (!got.includes(text)) {
      if (Date.now() - started > timeoutMs) throw new Error(`no "${text}" within ${timeoutMs} ms (got ${JSON.stringify(got)})`);
      await sleep(10);
    }
    return Date.now() - started;
  };
  return { socket, received: () => got, waitFor };
}

test('forwards both ways and tells connections apart by the client id of their first request', async () => {
  const proxy = await FaultProxy.start({ targetPort: echoPort });
  try {
    const a = await client(proxy.port);
    a.socket.write(request('app-r0', 'hello'));
    await a.waitFor('hello', 2000);
    a.socket.write('more');
    await a.waitFor('more', 2000);
    assert.deepEqual(
      proxy.list().map((c) => c.clientId),
      ['app-r0'],
    );
    a.socket.destroy();
  } finally {
    await proxy.close();
  }
});

test('a stall forwards nothing on the chosen connections, keeps them open, and resumes after it', async () => {
  const proxy = await FaultProxy.start({ targetPort: echoPort });
  try {
    const stalled = await client(proxy.port);
    const spared = await client(proxy.port);
    stalled.socket.write(request('app-r0', 'first'));
    spared.socket.write(request('app-r1', 'first'));
    await Promise.all([stalled.waitFor('first', 2000), spared.waitFor('first', 2000)]);

    assert.equal(proxy.stall(1500, (c) => c.clientId === 'app-r0'), 1);
    stalled.socket.write('during');
    spared.socket.write('during');
    await spared.waitFor('during', 1000);
    await sleep(800);
    assert.ok(!stalled.received().includes('during'), 'nothing came through while stalled');
    assert.ok(!stalled.socket.destroyed, 'the socket stays open');
    // A connection opened during the stall by the same client is stalled too.
    const late = await client(proxy.port);
    late.socket.write(request('app-r0', 'late'));
    await sleep(200);
    assert.ok(!late.received().includes('late'));

    const waited = await stalled.waitFor('during', 3000);
    assert.ok(waited > 100, `resumed after the stall (${waited} ms after the check)`);
    await late.waitFor('late', 2000);
    for (const c of [stalled, spared, late]) c.socket.destroy();
  } finally {
    await proxy.close();
  }
});

test('delayed responses arrive at least that much later; cut closes every connection', async () => {
  const proxy = await FaultProxy.start({ targetPort: echoPort });
  try {
    const c = await client(proxy.port);
    c.socket.write(request('app-r0', 'quick'));
    await c.waitFor('quick', 2000);
    proxy.delayResponses(400);
    const sent = Date.now();
    c.socket.write('slow');
    await c.waitFor('slow', 3000);
    assert.ok(Date.now() - sent >= 380, `took ${Date.now() - sent} ms`);
    proxy.delayResponses(0);

    const closed = new Promise<void>((resolve) => c.socket.once('close', () => resolve()));
    assert.equal(proxy.cut(), 1);
    await closed;
    // The proxy itself still accepts: clients reconnect through it.
    const again = await client(proxy.port);
    again.socket.write(request('app-r0', 'back'));
    await again.waitFor('back', 2000);
    again.socket.destroy();
  } finally {
    await proxy.close();
  }
});
