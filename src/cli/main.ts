import { Command, CommanderError } from 'commander';
import { isOnceflowError } from '../errors.ts';
import { registerDev } from './dev.ts';

const program = new Command('onceflow')
  .description('exactly-once Kafka-to-Kafka stream processing for TypeScript')
  .showHelpAfterError()
  .exitOverride();

registerDev(program);

try {
  await program.parseAsync(process.argv);
} catch (e) {
  if (e instanceof CommanderError) {
    process.exitCode = e.exitCode;
  } else if (isOnceflowError(e)) {
    // A known failure: the code and message say what is wrong; a stack trace would only hide it.
    console.error(`onceflow: error [${e.code}]: ${e.message}`);
    process.exitCode = 1;
  } else {
    throw e;
  }
}
