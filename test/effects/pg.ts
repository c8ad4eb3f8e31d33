import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const PG_URL = process.env.ONCEFLOW_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export function pool(max = 5): pg.Pool {
  return new pg.Pool({ connectionString: PG_URL, max });
}

/** A schema no other test (or earlier run) uses; everything a test creates lives in it. */
export function uniqueSchema(prefix: string): string {
  return `${prefix}_${randomBytes(4).toString('hex')}`;
}

export async function withSchema<T>(p: pg.Pool, prefix: string, fn: (schema: string) => Promise<T>): Promise<T> {
  const schema = uniqueSchema(prefix);
  await p.query(`CREATE SCHEMA "${schema}"`);
  try {
    return await fn(schema);
  } finally {
    await p.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  }
}
