import { parseAvroSchema, type AvroSchemaDefinition } from '../../src/serdes/avro-types.ts';
import {
  RegistryUnavailableError,
  SchemaIncompatibleError,
  type RawSchemaLookup,
  type RegistrySchemaType,
  type SchemaRegistryClient,
  type WriterSchemaLookup,
} from '../../src/serdes/index.ts';

/** In-memory registry: ids are global, subjects hold versions, `failures` simulates an outage. */
export class FakeRegistry implements SchemaRegistryClient {
  readonly url = 'fake://registry';
  readonly byId = new Map<number, string>();
  readonly subjects = new Map<string, number[]>();
  /** Ids absent here are Avro, as the registry's answers say by leaving schemaType out. */
  readonly types = new Map<number, RegistrySchemaType>();
  calls = 0;
  failures = 0;
  incompatible = new Set<string>();
  private unavailable() {
    this.calls++;
    if (this.failures > 0) {
      this.failures--;
      throw new RegistryUnavailableError('fake outage');
    }
  }
  async register(subject: string, schema: string, schemaType: RegistrySchemaType = 'AVRO'): Promise<number> {
    this.unavailable();
    if (this.incompatible.has(schema)) throw new SchemaIncompatibleError(subject, 'fake rule');
    for (const [id, s] of this.byId) if (s === schema && (this.types.get(id) ?? 'AVRO') === schemaType) return this.add(subject, id);
    const id = this.byId.size + 1;
    this.byId.set(id, schema);
    if (schemaType !== 'AVRO') this.types.set(id, schemaType);
    return this.add(subject, id);
  }
  private add(subject: string, id: number) {
    const versions = this.subjects.get(subject) ?? [];
    if (!versions.includes(id)) versions.push(id);
    this.subjects.set(subject, versions);
    return id;
  }
  async lookup(subject: string, schema: string): Promise<number | null> {
    this.unavailable();
    for (const id of this.subjects.get(subject) ?? []) if (this.byId.get(id) === schema) return id;
    return null;
  }
  async writerSchema(id: number): Promise<WriterSchemaLookup> {
    this.unavailable();
    const s = this.byId.get(id);
    if (s === undefined) return { status: 'not-found' };
    const schemaType = this.types.get(id);
    if (schemaType !== undefined) return { status: 'unusable', reason: `schema id ${id} is not an Avro schema` };
    return { status: 'found', type: parseAvroSchema(JSON.parse(s) as AvroSchemaDefinition) };
  }
  async schemaText(id: number): Promise<RawSchemaLookup> {
    this.unavailable();
    const schema = this.byId.get(id);
    if (schema === undefined) return { status: 'not-found' };
    return { status: 'found', schemaType: this.types.get(id) ?? 'AVRO', schema };
  }
}
