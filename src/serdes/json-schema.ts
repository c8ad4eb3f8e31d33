import { Ajv, type ErrorObject, type Options, type ValidateFunction } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import { JsonSchemaError } from './errors.ts';
import { readSchemaFile } from './schema-file.ts';

/** A JSON Schema as an object, as JSON text, or the path of a `.json` file (or a file URL). */
export type JsonSchemaSource = object | string | URL;

export function loadJsonSchema(source: JsonSchemaSource): object {
  if (source instanceof URL || (typeof source === 'string' && source.endsWith('.json') && !source.trimStart().startsWith('{'))) {
    const text = readSchemaFile(source, 'JSON', (message, cause) => new JsonSchemaError(message, { cause }));
    return parseSchema(text, String(source));
  }
  return typeof source === 'string' ? parseSchema(source, 'the inline JSON Schema') : source;
}

function parseSchema(text: string, origin: string): object {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (cause) {
    throw new JsonSchemaError(`${origin} is not JSON: ${(cause as Error).message}`, { cause });
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new JsonSchemaError(`${origin} is not a JSON Schema object`);
  return parsed;
}

/** The validator for the draft the schema names in `$schema`; draft-07 when it names none. */
function validatorFor(schema: object, options: Options): Ajv {
  const draft = String((schema as { $schema?: unknown }).$schema ?? '');
  // Keywords a registry schema carries for other tools (javaType, title variants) must not fail it.
  const all: Options = { allErrors: true, strict: false, ...options };
  const ajv = draft.includes('2020-12') ? new Ajv2020(all) : draft.includes('2019-09') ? new Ajv2019(all) : new Ajv(all);
  formats.default(ajv);
  return ajv;
}

export interface CompiledJsonSchema {
  /** Checks a value as it is (serialize: the topology's own value must not change). */
  readonly check: ValidateFunction;
  /** Checks a record and fills in the schema's `default`s for absent properties (deserialize). */
  readonly read: ValidateFunction;
}

export function compileJsonSchema(schema: object): CompiledJsonSchema {
  try {
    return {
      check: validatorFor(schema, {}).compile(schema),
      read: validatorFor(schema, { useDefaults: true }).compile(schema),
    };
  } catch (cause) {
    throw new JsonSchemaError(`the JSON Schema does not compile: ${(cause as Error).message}`, { cause });
  }
}

/** Paths (JSON Pointer, `/` for the whole value) with what is wrong there. */
export const violations = (errors: readonly ErrorObject[] | null | undefined): string[] =>
  (errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? e.keyword}`);
