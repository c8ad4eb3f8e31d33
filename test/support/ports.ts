import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A port nothing listens on right now: taken from the OS, then released. */
export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as AddressInfo).port;
  await new Promise((resolve) => s.close(resolve));
  return port;
}
