import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command, CommanderError } from 'commander';
import { isOnceflowError } from '../errors.ts';
import { isClientError } from '../kafka/clients.ts';
import { projectRoot } from '../kafka/paths.ts';
import { registerAcls } from './acls.ts';
import { registerChaos } from './chaos.ts';
import { registerConfig } from './config.ts';
import { registerConsole } from './console.ts';
import { registerConsume } from './consume.ts';
import { registerDemo } from './demo.ts';
import { registerDescribe } from './describe.ts';
import { registerDev } from './dev.ts';
import { registerDlq } from './dlq.ts';
import { registerOutbox } from './outbox.ts';
import { registerProduce } from './produce.ts';
import { registerQuery } from './query.ts';
import { registerReset } from './reset.ts';
import { registerRun } from './run.ts';
import { registerSetup } from './setup.ts';
import { registerStatus } from './status.ts';
import { registerTopics } from './topics.ts';
import { registerVerify } from './verify.ts';

// Read at run time rather than imported: src/cli and dist/src/cli sit at different depths below package.json.
const { version } = JSON.parse(readFileSync(join(projectRoot(), 'package.json'), 'utf8')) as { version: string };

const program = new Command('onceflow')
  .description('exactly-once Kafka-to-Kafka stream processing for TypeScript')
  .version(version)
  .showHelpAfterError()
  .exitOverride();

registerSetup(program);
registerDev(program);
registerTopics(program);
registerProduce(program);
registerConsume(program);
registerDescribe(program);
registerRun(program);
registerVerify(program);
registerChaos(program);
registerDemo(program);
registerStatus(program);
registerReset(program);
registerConsole(program);
registerQuery(program);
registerConfig(program);
registerOutbox(program);
registerDlq(program);
registerAcls(program);

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
