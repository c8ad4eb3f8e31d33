import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command, CommanderError } from 'commander';
import { isOnceflowError } from '../errors.ts';
import { isClientError } from '../kafka/client-errors.ts';
import { projectRoot } from '../kafka/paths.ts';
import { commandSpec, COMMANDS, defineCommand, isCommandName, type CommandName } from './commands.ts';

// Read at run time rather than imported: src/cli and dist/src/cli sit at different depths below package.json.
const { version } = JSON.parse(readFileSync(join(projectRoot(), 'package.json'), 'utf8')) as { version: string };

const program = new Command('onceflow')
  .description('exactly-once Kafka-to-Kafka stream processing for TypeScript')
  .version(version)
  .showHelpAfterError()
  .exitOverride();

type Register = (program: Command) => void;

// Each command's module is imported only when that command runs: importing all of them (the Kafka
// client, the runtime, zod schemas, the console server) took most of a start-up (docs/operations.md#start-up).
const LOADERS: Record<CommandName, () => Promise<Register>> = {
  setup: async () => (await import('./setup.ts')).registerSetup,
  dev: async () => (await import('./dev.ts')).registerDev,
  topics: async () => (await import('./topics.ts')).registerTopics,
  produce: async () => (await import('./produce.ts')).registerProduce,
  consume: async () => (await import('./consume.ts')).registerConsume,
  describe: async () => (await import('./describe.ts')).registerDescribe,
  run: async () => (await import('./run.ts')).registerRun,
  verify: async () => (await import('./verify.ts')).registerVerify,
  chaos: async () => (await import('./chaos.ts')).registerChaos,
  demo: async () => (await import('./demo.ts')).registerDemo,
  status: async () => (await import('./status.ts')).registerStatus,
  reset: async () => (await import('./reset.ts')).registerReset,
  upgrade: async () => (await import('./upgrade.ts')).registerUpgrade,
  console: async () => (await import('./console.ts')).registerConsole,
  query: async () => (await import('./query.ts')).registerQuery,
  config: async () => (await import('./config.ts')).registerConfig,
  outbox: async () => (await import('./outbox.ts')).registerOutbox,
  dlq: async () => (await import('./dlq.ts')).registerDlq,
  acls: async () => (await import('./acls.ts')).registerAcls,
};

// The program's own options take no value, so the first other word names the command (`help <command>` too).
const words = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const invoked = words[0] === 'help' ? words[1] : words[0];
const command = isCommandName(invoked) ? invoked : undefined;
// Registering tsx costs more than the rest of a start-up (a loader thread): only a command that may import
// a topology file pays for it. A checkout runs src/ through tsx already.
if (command !== undefined && commandSpec(command).loadsTopology && !import.meta.url.endsWith('.ts')) (await import('tsx/esm/api')).register();
for (const name of Object.keys(COMMANDS) as CommandName[]) {
  // The others only need their line in the command list.
  if (name === command) (await LOADERS[name]())(program);
  else defineCommand(program, name);
}

try {
  await program.parseAsync(process.argv);
} catch (e) {
  if (e instanceof CommanderError) {
    process.exitCode = e.exitCode;
  } else if (isOnceflowError(e)) {
    // A known failure: the code and message say what is wrong; a stack trace would only hide it.
    console.error(`onceflow: error [${e.code}]: ${e.message}`);
    process.exitCode = 1;
  } else if (isClientError(e)) {
    // The Kafka client's own error that no onceflow check turned into a typed one: its text, without the
    // client library's stack, which names none of the user's code.
    console.error(`onceflow: Kafka client error [${e.type ?? e.code}]: ${e.message}`);
    process.exitCode = 1;
  } else {
    throw e;
  }
}
