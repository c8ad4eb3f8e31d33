/**
 * Encode/decode throughput of the JSON, plain Avro and registry Avro serdes on an
 * order record of about 200 bytes as JSON. Registry Avro uses an in-process client
 * with a fixed id: the point is the per-record cost, which never touches the registry.
 * Run: node --import tsx bench/serdes.ts [records]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { jsonSerde, avroSerde, registryAvroSerde, type Serde, type SchemaRegistryClient } from '../src/serdes/index.ts';

interface Order {
  eventId: string;
  orderId: string;
  customerId: string;
  status: string;
  version: number;
  amount: string;
}

const schema = {
  type: 'record',
  name: 'Order',
  namespace: 'onceflow.bench',
  fields: [
    { name: 'eventId', type: { type: 'string', logicalType: 'uuid' } },
    { name: 'orderId', type: 'string' },
    { name: 'customerId', type: 'string' },
    { name: 'status', type: 'string' },
    { name: 'version', type: 'long' },
    { name: 'amount', type: { type: 'bytes', logicalType: 'decimal', precision: 18, scale: 2 } },
  ],
};

const N = Number(process.argv[2] ?? 200_000);
const ctx = { topic: 'orders', role: 'value' } as const;
const records: Order[] = Array.from({ length: 1000 }, (_, i) => ({
  eventId: `123e4567-e89b-42d3-a456-${String(426614174000 + i).padStart(12, '0')}`,
  orderId: `order-${String(1_000_000 + i)}-2024-05-01-eu-west-priority-express`,
  customerId: `customer-${String(500_000 + i)}-retail-segment-loyalty-gold-tier`,
  status: ['NEW', 'PAID', 'SHIPPED'][i % 3] as string,
  version: i,
  amount: `${(i * 137) % 100000}.${String(i % 100).padStart(2, '0')}`,
}));

const fixedIdClient: SchemaRegistryClient = {
  url: 'bench://fixed',
  register: async () => 1,
  lookup: async () => 1,
  writerSchema: async () => ({ status: 'not-found' }),
  schemaText: async () => ({ status: 'not-found' }),
};

function measure(name: string, serde: Serde<Order>) {
  const encoded = records.map((r) => serde.serialize(r, ctx) as Buffer);
  for (let i = 0; i < 20_000; i++) serde.deserialize(serde.serialize(records[i % 1000] as Order, ctx), ctx); // warm-up
  let t = process.hrtime.bigint();
  for (let i = 0; i < N; i++) serde.serialize(records[i % 1000] as Order, ctx);
  const encodeNs = Number(process.hrtime.bigint() - t);
  t = process.hrtime.bigint();
  for (let i = 0; i < N; i++) serde.deserialize(encoded[i % 1000] as Buffer, ctx);
  const decodeNs = Number(process.hrtime.bigint() - t);
  const avgBytes = encoded.reduce((s, b) => s + b.length, 0) / encoded.length;
  const row = {
    serde: name,
    avgBytes: Math.round(avgBytes),
    encodePerSec: Math.round(N / (encodeNs / 1e9)),
    decodePerSec: Math.round(N / (decodeNs / 1e9)),
  };
  console.log(`${name.padEnd(14)} ${String(row.avgBytes).padStart(4)} B  encode ${row.encodePerSec.toLocaleString('en-US').padStart(11)} rec/s  decode ${row.decodePerSec.toLocaleString('en-US').padStart(11)} rec/s`);
  return row;
}

const registry = registryAvroSerde<Order>({ schema, client: fixedIdClient });
await registry.prepare?.(ctx, {});
const results = [
  measure('json', jsonSerde<Order>()),
  measure('avro', avroSerde<Order>({ schema })),
  measure('registry-avro', registry),
];

const date = new Date().toISOString().slice(0, 10);
const out = new URL(`./results/serdes-${date}.json`, import.meta.url);
mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
writeFileSync(out, JSON.stringify({ date: new Date().toISOString(), node: process.version, records: N, results }, null, 2) + '\n');
console.log(`wrote ${out.pathname}`);
