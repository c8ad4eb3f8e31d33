import type { ClientOptions } from './admin.ts';
import { sendToAnyBroker, type BrokerRequest } from './wire.ts';

/** What a broker's listener speaks, learnt without credentials: whether it wants TLS, and which SASL mechanisms it offers (none: no SASL). */
export interface ListenerProtocol {
  readonly tls: boolean;
  readonly saslMechanisms: readonly string[];
}

/**
 * SaslHandshake v1 naming a mechanism no broker offers: a SASL listener answers it before any login
 * with the mechanisms it does offer; a listener without SASL answers with none (ILLEGAL_SASL_STATE).
 */
const SASL_HANDSHAKE: BrokerRequest<string[]> = {
  apiKey: 17,
  version: 1,
  body: (w) => w.string('onceflow-probe'),
  parse: (r) => {
    r.int16();
    return r.array(() => r.nullableString() ?? '').filter((m) => m !== '');
  },
};

const PROBE_TIMEOUT_MS = 3_000;

/**
 * Asks the listener in plaintext, then over TLS (a TLS listener drops the plaintext bytes); undefined
 * when neither is answered (nothing listens, or it is no Kafka broker).
 */
export async function probeListener(bootstrap: string): Promise<ListenerProtocol | undefined> {
  for (const tls of [false, true]) {
    try {
      const saslMechanisms = await sendToAnyBroker(bootstrap, SASL_HANDSHAKE, { timeoutMs: PROBE_TIMEOUT_MS, unverifiedTls: tls });
      return { tls, saslMechanisms };
    } catch {
      // Not answered this way: try the other, or report nothing.
    }
  }
  return undefined;
}

/** librdkafka's security.protocol of a listener (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL). */
export function securityProtocolOf(listener: ListenerProtocol): string {
  return `${listener.saslMechanisms.length > 0 ? 'SASL_' : ''}${listener.tls ? 'SSL' : 'PLAINTEXT'}`;
}

/** The security.protocol a client's options make it speak; librdkafka's default is plaintext. */
export function clientSecurityProtocol(clientOptions: ClientOptions): string {
  return String(clientOptions['security.protocol'] ?? 'PLAINTEXT').toUpperCase();
}
