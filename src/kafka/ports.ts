import { createServer } from 'node:net';
import { LocalClusterError } from './errors.ts';

export async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const server = createServer();
    server.once('error', rej);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => res(port));
    });
  });
}

export async function assertPortFree(port: number, what: string): Promise<void> {
  await new Promise<void>((res, rej) => {
    const server = createServer();
    server.once('error', () => rej(new LocalClusterError('PORT_TAKEN', `${what} port ${port} on 127.0.0.1 is already in use`)));
    server.listen(port, '127.0.0.1', () => server.close(() => res()));
  });
}

async function isPortFree(port: number): Promise<boolean> {
  return assertPortFree(port, 'a').then(
    () => true,
    () => false,
  );
}

/** The port asked for, else the one used before when it is still free, else any free one. */
export async function pickPort(wanted: number | undefined, previous: number | undefined): Promise<number> {
  if (wanted !== undefined) return wanted;
  if (previous !== undefined && previous > 0 && (await isPortFree(previous))) return previous;
  return freePort();
}
