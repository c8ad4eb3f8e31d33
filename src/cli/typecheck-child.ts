/**
 * Runs one type check and prints its outcome as JSON. A process of its own because the compiler
 * leaves a worker that checked its topology in-process about 250 MB larger for the rest of its life.
 */
import { checkProgram } from './typecheck-program.ts';

const [file, configPath, cwd, buildInfoFile] = process.argv.slice(2);
if (file === undefined || cwd === undefined) {
  process.stderr.write('usage: typecheck-child <file> <tsconfig.json or ""> <cwd> [<tsbuildinfo>]\n');
  process.exit(2);
}
process.stdout.write(`${JSON.stringify(await checkProgram(file, configPath || undefined, cwd, buildInfoFile || undefined))}\n`);
