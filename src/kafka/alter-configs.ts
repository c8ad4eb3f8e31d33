import { OnceflowError } from '../errors.ts';
import { sendToAnyBroker, type BrokerRequest } from './wire.ts';

// IncrementalAlterConfigs (API key 44, version 0: the non-flexible one) changes only the settings it
// names, unlike AlterConfigs, which replaces a topic's whole set of overrides. A KRaft broker forwards
// it to the controller, so any broker will do. Kafka 4 takes it for a consumer group's dynamic configs
// too (KIP-848: the group's session timeout, which the broker enforces under the consumer protocol).

/** The broker refused to change a topic's config (authorization, an invalid value, a policy). */
export class AlterConfigsError extends OnceflowError {
  readonly code = 'ALTER_CONFIGS_REFUSED';
  constructor(
    message: string,
    readonly topic: string,
    readonly errorCode: number,
  ) {
    super(message);
  }
}

/** The broker refused to change a consumer group's config (a value outside the broker's bounds, authorization). */
export class GroupConfigsError extends OnceflowError {
  readonly code = 'GROUP_CONFIGS_REFUSED';
  constructor(
    message: string,
    readonly group: string,
    readonly errorCode: number,
  ) {
    super(message);
  }
}

const INCREMENTAL_ALTER_CONFIGS = 44;
const RESOURCE_TOPIC = 2;
const RESOURCE_GROUP = 32;
const OP_SET = 0;

/** Sets each named config of `topic` to its value, leaving its other settings as they are. */
export async function setTopicConfigs(bootstrap: string, topic: string, settings: Readonly<Record<string, string>>, options: { readonly clientId?: string; readonly timeoutMs?: number } = {}): Promise<void> {
  const refused = await sendToAnyBroker(bootstrap, incrementalAlterConfigsRequest(topic, settings), options);
  if (refused !== undefined) throw new AlterConfigsError(`the broker refused to set ${Object.keys(settings).join(', ')} of topic ${topic}: error ${refused.errorCode}${refused.message ? ` (${refused.message})` : ''}`, topic, refused.errorCode);
}

/** Sets each named dynamic config of consumer group `group` (e.g. `consumer.session.timeout.ms`), leaving its others as they are. */
export async function setGroupConfigs(bootstrap: string, group: string, settings: Readonly<Record<string, string>>, options: { readonly clientId?: string; readonly timeoutMs?: number } = {}): Promise<void> {
  const refused = await sendToAnyBroker(bootstrap, incrementalAlterConfigsRequest(group, settings, 'group'), options);
  if (refused !== undefined) throw new GroupConfigsError(`the broker refused to set ${Object.keys(settings).join(', ')} of group ${group}: error ${refused.errorCode}${refused.message ? ` (${refused.message})` : ''}`, group, refused.errorCode);
}

/** The request, and the response read as the resource's error (undefined: applied). Unit-tested on bytes. */
export function incrementalAlterConfigsRequest(resource: string, settings: Readonly<Record<string, string>>, kind: 'topic' | 'group' = 'topic'): BrokerRequest<{ readonly errorCode: number; readonly message: string | null } | undefined> {
  return {
    apiKey: INCREMENTAL_ALTER_CONFIGS,
    version: 0,
    body: (w) => {
      w.array([resource], (name) => w.int8(kind === 'group' ? RESOURCE_GROUP : RESOURCE_TOPIC).string(name).array(Object.entries(settings), ([key, value]) => w.string(key).int8(OP_SET).string(value)));
      w.int8(0); // validate_only
    },
    parse: (r) => {
      r.int32(); // throttle time
      const results = r.array(() => ({ errorCode: r.int16(), message: r.nullableString(), type: r.int8(), name: r.nullableString() }));
      const mine = results.find((x) => x.name === resource) ?? results[0];
      if (mine === undefined) return { errorCode: -1, message: `no result for the ${kind}` };
      return mine.errorCode === 0 ? undefined : { errorCode: mine.errorCode, message: mine.message };
    },
  };
}
