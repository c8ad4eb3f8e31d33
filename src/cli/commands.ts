import type { Command } from 'commander';

/**
 * Every top-level command's usage and description, apart from the modules that implement them: `onceflow
 * --help` lists them all and `onceflow <command>` loads only its own module (main.ts), so neither pays for
 * importing every command's dependencies (the Kafka client, the runtime, the compiler's callers).
 */
export interface CommandSpec {
  readonly usage: string;
  readonly description: string;
  /** It may import a topology file, which is TypeScript: Node 20 needs tsx registered first (main.ts). */
  readonly loadsTopology?: true;
}

export const COMMANDS = {
  setup: {
    usage: 'setup',
    description: 'fetch the local Kafka and schema registry jars with Maven into the cache now (`dev up`, `demo` and `chaos` do it on first use); ONCEFLOW_CACHE moves the cache',
  },
  dev: {
    usage: 'dev',
    description: 'a local Kafka (KRaft: one node, or --brokers 3) and schema registry for development and tests',
  },
  topics: {
    usage: 'topics',
    description: 'create, list and describe topics',
  },
  produce: {
    usage: 'produce <topic> [file]',
    description: 'write one record per line of a file (or stdin) in one transaction: every line is checked first, and any failure writes nothing. JSON values by default, text, or registry Avro, Protobuf or JSON Schema with --schema',
  },
  consume: {
    usage: 'consume <topic>',
    description: 'print the records of a topic as JSON lines (registry Avro, JSON and text decoded), outside any consumer group',
  },
  describe: {
    loadsTopology: true,
    usage: 'describe <file>',
    description: 'print the compiled topology: sub-topologies, stores, topics and where exactly-once ends',
  },
  run: {
    loadsTopology: true,
    usage: 'run <topology>',
    description: 'run a topology file as one worker replica (replicas share the app id; give each its own --instance-id)',
  },
  verify: {
    loadsTopology: true,
    usage: 'verify [topology]',
    description: "check a run's committed output against its input through the lineage headers: no duplicate, no orphan, no gap in any topic of the topology; with --model also no loss and exact aggregates (exit 1 on any violation)",
  },
  chaos: {
    usage: 'chaos',
    description: 'kill replicas (and brokers, or stall their connections) while they process, then verify the committed output',
  },
  demo: {
    usage: 'demo',
    description: 'the story of where exactly-once holds and where it stops, each step measured on a local Kafka',
  },
  status: {
    loadsTopology: true,
    usage: 'status [topology]',
    description: "an application's consumer group: members, assigned partitions, committed and end offsets, lag; the app id defaults to the topology file's",
  },
  reset: {
    loadsTopology: true,
    usage: 'reset <topology>',
    description: "reprocess an application from scratch (Kafka Streams' application reset tool): its consumer group's input offsets to the beginning, its internal repartition and changelog topics and its topology record (<app-id>-topology) deleted, its local state directory (<state-dir>/<app-id>) deleted. Source and output topics are kept. Refuses while the group has live members: stop every worker first",
  },
  upgrade: {
    loadsTopology: true,
    usage: 'upgrade',
    description: "before deploying a new version: `upgrade check <topology>` compares it with the topology the application runs (recorded in <app-id>-topology) and classifies each change as compatible, state-resetting or breaking",
  },
  console: {
    loadsTopology: true,
    usage: 'console [topology]',
    description: 'serve a web page with the topology (where exactly-once ends) and the live state of the group, its members and its dead letters',
  },
  query: {
    usage: 'query <app> <store> <key>',
    description: "read one key of a running application's store (interactive query; replicas need --advertised-url); a non-string key is JSON",
  },
  config: {
    loadsTopology: true,
    usage: 'config',
    description: 'inspect the worker configuration',
  },
  outbox: {
    usage: 'outbox',
    description: 'the transactional outbox: events written with the data in PostgreSQL, relayed to Kafka',
  },
  dlq: {
    usage: 'dlq',
    description: 'inspect and replay dead-lettered records',
  },
  acls: {
    loadsTopology: true,
    usage: 'acls <topology>',
    description: 'print the least-privilege ACLs a worker principal needs for a topology (one per line: principal operation resourceType patternType name)',
  },
} as const satisfies Record<string, CommandSpec>;

export type CommandName = keyof typeof COMMANDS;

export const isCommandName = (word: string | undefined): word is CommandName => word !== undefined && Object.hasOwn(COMMANDS, word);

export const commandSpec = (name: CommandName): CommandSpec => COMMANDS[name];

/** The command `name` under `program`, with its usage and description: the module adds its options and action. */
export function defineCommand(program: Command, name: CommandName): Command {
  const { usage, description } = commandSpec(name);
  return program.command(usage).description(description);
}
