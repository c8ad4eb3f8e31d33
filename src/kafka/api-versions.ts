import { sendToAnyBroker, type BrokerRequest } from './wire.ts';

// ApiVersions (API key 18, version 2: the last non-flexible one) lists the requests a broker serves. A
// broker serves ConsumerGroupHeartbeat (API key 68) only from Kafka 4.0 on, or earlier with the new
// protocol switched on by hand: exactly the brokers a `group.protocol=consumer` member can join.

const API_VERSIONS = 18;
const CONSUMER_GROUP_HEARTBEAT = 68;

/** The request, and the response read as API key -> highest version served. Unit-tested on bytes. */
export function apiVersionsRequest(): BrokerRequest<ReadonlyMap<number, number>> {
  return {
    apiKey: API_VERSIONS,
    version: 2,
    body: () => {},
    parse: (r) => {
      const errorCode = r.int16();
      const keys = r.array(() => ({ apiKey: r.int16(), min: r.int16(), max: r.int16() }));
      return errorCode === 0 ? new Map(keys.map((k) => [k.apiKey, k.max])) : new Map();
    },
  };
}

/** True when the first broker of `bootstrap` that answers serves the KIP-848 consumer group protocol. */
export async function servesConsumerGroupProtocol(bootstrap: string, options: { readonly clientId?: string; readonly timeoutMs?: number } = {}): Promise<boolean> {
  const versions = await sendToAnyBroker(bootstrap, apiVersionsRequest(), options);
  return versions.has(CONSUMER_GROUP_HEARTBEAT);
}
