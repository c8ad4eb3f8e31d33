import { OnceflowError } from '../errors.ts';
import { withAdmin, type ClientOptions } from './admin.ts';
import { clientSecurityProtocol, probeListener, securityProtocolOf, type ListenerProtocol } from './listener-probe.ts';

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

/**
 * A broker answered, but its listener speaks another protocol than the client (a plaintext client at a
 * SASL_SSL listener): librdkafka reports that only as a transport failure, which read as "no broker".
 */
export class ListenerProtocolError extends OnceflowError {
  readonly code = 'LISTENER_PROTOCOL_MISMATCH';
  constructor(
    readonly bootstrap: string,
    readonly listenerProtocol: string,
    message: string,
  ) {
    super(message);
  }
}

/** The librdkafka options a client needs for a listener of this protocol, and what each is. */
function settingsFor(listener: ListenerProtocol): string {
  const protocol = securityProtocolOf(listener);
  const settings = [`security.protocol=${protocol}`];
  if (listener.saslMechanisms.length > 0) settings.push(`sasl.mechanisms=${listener.saslMechanisms.join('|')} (one of)`, 'sasl.username=<user>', 'sasl.password=<password>');
  if (listener.tls) settings.push("ssl.ca.location=<the CA file that signed the broker's certificate>");
  return settings.join(', ');
}

function mismatchError(bootstrap: string, from: string, listener: ListenerProtocol, clientOptions: ClientOptions, hint: string | undefined): ListenerProtocolError | undefined {
  const wanted = securityProtocolOf(listener);
  const spoken = clientSecurityProtocol(clientOptions);
  if (wanted === spoken) return undefined;
  const asks = [listener.tls ? 'TLS' : '', listener.saslMechanisms.length > 0 ? `SASL (${listener.saslMechanisms.join(', ')})` : ''].filter((s) => s !== '').join(' and ');
  return new ListenerProtocolError(
    bootstrap,
    wanted,
    `the broker at ${bootstrap}${from} answered, but its listener asks for ${wanted}${asks ? ` (${asks})` : ''} and this client speaks ${spoken}. Set ${settingsFor(listener)}: each as --kafka key=value, or as ONCEFLOW_KAFKA_<NAME> (ONCEFLOW_KAFKA_SECURITY_PROTOCOL=${wanted}, ...).${hint ? ` ${hint}` : ''}`,
  );
}

export interface ProbeOptions {
  readonly clientOptions?: ClientOptions;
  /** Where the address came from (`--bootstrap`, `ONCEFLOW_BOOTSTRAP`, ...), for the error message. */
  readonly source?: string;
  /** A next step for the user, appended to the error message. */
  readonly hint?: string;
  /** A next step appended to a listener-protocol mismatch (e.g. where a dev cluster's settings are). */
  readonly protocolHint?: string;
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
  const from = options.source ? ` (from ${options.source})` : '';
  const clientOptions = options.clientOptions ?? {};
  while (attempts === 0 || Date.now() - started + REQUEST_TIMEOUT_MS <= timeoutMs) {
    attempts++;
    try {
      await withAdmin(bootstrap, (admin) => admin.listTopics({ timeout: REQUEST_TIMEOUT_MS }), clientOptions);
      return;
    } catch (e) {
      // Wrong credentials are their own, typed, answer: the broker is there.
      if (e instanceof OnceflowError) throw e;
      last = e;
    }
    // Asked once, after the first failure: a listener that wants another protocol is said at once, not after the retries.
    if (attempts === 1) {
      const listener = await probeListener(bootstrap);
      const mismatch = listener && mismatchError(bootstrap, from, listener, clientOptions, options.protocolHint);
      if (mismatch) throw mismatch;
    }
  }
  const why = last instanceof Error ? last.message : String(last);
  throw new BrokerUnreachableError(
    bootstrap,
    `no Kafka broker answered at ${bootstrap}${from}: ${attempts} metadata request${attempts > 1 ? 's' : ''} over ${((Date.now() - started) / 1000).toFixed(1)} s failed (${why}). Is the broker running and the address right?${options.hint ? ` ${options.hint}` : ''}`,
    { cause: last },
  );
}
