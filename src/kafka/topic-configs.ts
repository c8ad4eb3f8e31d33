import { OnceflowError } from '../errors.ts';
import type { ClientOptions } from './admin.ts';
import { sendToAnyBroker, speaksPlaintext, type BrokerRequest } from './wire.ts';

// The Kafka client's admin (KafkaJS-compatible layer and node-rdkafka layer alike) has no
// describeConfigs, and a topic's max.message.bytes decides whether the broker takes a record batch,
// its retention whether an internal topic keeps a backfill's records. So this asks a broker itself:
// one DescribeConfigs request (API key 32, version 1, the oldest Kafka 4 still serves).

/** A broker answered DescribeConfigs with an error for a topic. */
export class DescribeConfigsError extends OnceflowError {
  readonly code = 'DESCRIBE_CONFIGS_FAILED';
}

const DESCRIBE_CONFIGS = 32;
const RESOURCE_TOPIC = 2;

/** Only a plaintext listener is spoken to: TLS and SASL are the Kafka client's, which cannot send this request. */
export function canDescribeConfigs(kafka: ClientOptions): boolean {
  return speaksPlaintext(kafka);
}

export interface DescribeOptions {
  readonly clientId?: string;
  readonly timeoutMs?: number;
}

/** `config` of each topic as the broker applies it (the topic's own value, or the broker's default). */
export async function describeTopicConfig(bootstrap: string, topics: readonly string[], config: string, options: DescribeOptions = {}): Promise<Map<string, string>> {
  const described = await describeTopicConfigs(bootstrap, topics, [config], options);
  return new Map([...described].flatMap(([topic, values]) => (values.has(config) ? [[topic, values.get(config)!] as const] : [])));
}

/** The named configs of each topic as the broker applies them: topic → config name → value. */
export async function describeTopicConfigs(bootstrap: string, topics: readonly string[], configs: readonly string[], options: DescribeOptions = {}): Promise<Map<string, Map<string, string>>> {
  if (topics.length === 0) return new Map();
  return sendToAnyBroker(bootstrap, describeConfigsRequest(topics, configs), options);
}

/** The request and its response's reading, apart from the connection (unit-tested on bytes). */
export function describeConfigsRequest(topics: readonly string[], configs: readonly string[]): BrokerRequest<Map<string, Map<string, string>>> {
  return {
    apiKey: DESCRIBE_CONFIGS,
    version: 1,
    body: (w) => {
      w.array(topics, (topic) => w.int8(RESOURCE_TOPIC).string(topic).array(configs, (name) => w.string(name)));
      w.int8(0); // include_synonyms
    },
    parse: (r) => {
      r.int32(); // throttle time
      const out = new Map<string, Map<string, string>>();
      r.array(() => {
        const errorCode = r.int16();
        const errorMessage = r.nullableString();
        r.int8(); // resource type
        const topic = r.nullableString() ?? '';
        if (errorCode !== 0) throw new DescribeConfigsError(`topic ${topic}: error ${errorCode}${errorMessage ? ` (${errorMessage})` : ''}`);
        const values = new Map<string, string>();
        r.array(() => {
          const name = r.nullableString();
          const value = r.nullableString();
          r.int8(); // read only
          r.int8(); // config source
          r.int8(); // sensitive
          r.array(() => [r.nullableString(), r.nullableString(), r.int8()]); // synonyms
          if (name !== null && value !== null) values.set(name, value);
        });
        out.set(topic, values);
      });
      return out;
    },
  };
}
