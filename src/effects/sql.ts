import { EffectConfigError } from './errors.ts';

const IDENT = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/**
 * Table and column names go into generated SQL, where they cannot be bind parameters; only plain
 * identifiers (optionally schema-qualified) are accepted, then double-quoted so case is kept.
 */
export function quoteIdent(name: string): string {
  const parts = name.split('.');
  if (parts.length > 2 || parts.some((p) => !IDENT.test(p))) {
    throw new EffectConfigError(`${JSON.stringify(name)} is not a plain SQL identifier (letters, digits, _; optionally schema.table)`);
  }
  return parts.map((p) => `"${p}"`).join('.');
}

/** The unqualified name, as PostgreSQL reports it in an error's `table` field. */
export function bareName(name: string): string {
  return name.split('.').at(-1) ?? name;
}
