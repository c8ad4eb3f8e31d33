import { OnceflowError } from '../errors.ts';
import { withAdmin, type ClientOptions } from './admin.ts';

/**
 * No broker answered at the address a command was given. Said within seconds, naming the address and
 * where it came from: left to the clients, an unreachable broker was a 33 s wait ending in a raw
 * `Local: Broker transport failure` stack, or a segfault of the admin client's group calls.
 */
export class BrokerUnreachableError extends OnceflowError {
  readonly code = 'BROKER_UNREACHABLE';
  constructor(
    readonly bootstrap: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export interface ProbeOptions {
  readonly clientOptions?: ClientOptions;
  /** Where the address came from (`--bootstrap`, `ONCEFLOW_BOOTSTRAP`, ...), for the error message. */
  readonly source?: string;
  /** A next step for the user, appended to the error message. */
  readonly hint?: string;
  /** Total time allowed; default 9 s (three metadata requests of 3 s). */
  readonly timeoutMs?: number;
}

const REQUEST_TIMEOUT_MS = 3_000;

/**
 * Asks the broker for its topic list until it answers or the time is up. A few tries rather than one:
 * the first metadata request of a fresh client can fail on a loaded machine although the broker is up.
 */
export async function requireBroker(bootstrap: string, options: ProbeOptions = {}): Promise<void> {
  const timeoutMs = options.timeoutMs ?? 3 * REQUEST_TIMEOUT_MS;
  const started = Date.now();
  let attempts = 0;
  let last: unknown;
  while (attempts === 0 || Date.now() - started + REQUEST_TIMEOUT_MS <= timeoutMs) {
    attempts++;
    try {
      await withAdmin(bootstrap, (admin) => admin.listTopics({ timeout: REQUEST_TIMEOUT_MS }), options.clientOptions ?? {});
      return;
    } catch (e) {
      // Wrong credentials are their own, typed, answer: the broker is there.
      if (e instanceof OnceflowError) throw e;
      last = e;
    }
  }
  const why = last instanceof Error ? last.message : String(last);
  const from = options.source ? ` (from ${options.source})` : '';
  throw new BrokerUnreachableError(
    bootstrap,
    `no Kafka broker answered at ${bootstrap}${from}: ${attempts} metadata request${attempts > 1 ? 's' : ''} over ${((Date.now() - started) / 1000).toFixed(1)} s failed (${why}). Is the broker running and the address right?${options.hint ? ` ${options.hint}` : ''}`,
    { cause: last },
  );
}
