import { readFileSync } from 'node:fs';

/**
 * The text of a schema file, or the format's own schema error naming the file: a reader schema
 * that cannot be read must stop the topology at construction, with the code of its format.
 */
export function readSchemaFile(source: string | URL, format: string, fail: (message: string, cause: unknown) => Error): string {
  try {
    return readFileSync(source, 'utf8');
  } catch (cause) {
    throw fail(`cannot read ${format} schema file ${String(source)}: ${(cause as Error).message}`, cause);
  }
}
