import { InvalidArgumentError, type Command } from 'commander';
import { defineCommand } from './commands.ts';
import { KafkaJS } from '@confluentinc/kafka-javascript';
import { ensureTopics, requireTopics, withAdmin } from '../kafka/admin.ts';
import { addClientOptions } from './client-options.ts';
import { connect, type ConnectionFlags } from './connection.ts';
import { intAtLeast } from './int-option.ts';

/** Repeated `--config key=value`, refused by commander (naming the option) when a pair has no key. */
function collectPair(kv: string, prev: Record<string, string> = {}): Record<string, string> {
  const at = kv.indexOf('=');
  if (at <= 0) throw new InvalidArgumentError('expected key=value, e.g. retention.ms=86400000');
  return { ...prev, [kv.slice(0, at)]: kv.slice(at + 1) };
}

export function registerTopics(program: Command): void {
  const topics = defineCommand(program, 'topics');
  addClientOptions(topics
    .command('create <names...>')
    .description('create topics that do not exist yet (existing ones are left as they are)')
    .option('--partitions <n>', 'partitions of each new topic', intAtLeast(1), 1)
    .option('--compact', 'cleanup.policy=compact')
    .option('--config <key=value>', 'topic config, repeatable (e.g. retention.ms=86400000)', collectPair))
    .action(async (names: string[], opts: ConnectionFlags & { partitions: number; compact?: boolean; config?: Record<string, string> }) => {
      const { bootstrap, clientOptions } = await connect(opts);
      const existing = await withAdmin(bootstrap, async (admin) => {
        const before = new Set(await admin.listTopics());
        await ensureTopics(admin, names.map((name) => ({ name, partitions: opts.partitions, compact: opts.compact === true, config: opts.config ?? {} })));
        return before;
      }, clientOptions);
      for (const name of names) console.log(existing.has(name) ? `exists: ${name}` : `created: ${name} (${opts.partitions} partition${opts.partitions > 1 ? 's' : ''})`);
    });
  addClientOptions(topics
    .command('list')
    .description('the topics on the cluster (internal __ topics only with --all)')
    .option('--all', 'include Kafka\'s internal topics'))
    .action(async (opts: ConnectionFlags & { all?: boolean }) => {
      const { bootstrap, clientOptions } = await connect(opts);
      const names = await withAdmin(bootstrap, (admin) => admin.listTopics(), clientOptions);
      for (const name of names.filter((n) => opts.all || !n.startsWith('__')).sort()) console.log(name);
    });
  addClientOptions(topics
    .command('describe <topic>')
    .description('partitions, leaders and offsets of a topic')
    .option('--json', 'print JSON'))
    .action(async (topic: string, opts: ConnectionFlags & { json?: boolean }) => {
      const { bootstrap, clientOptions } = await connect(opts);
      const described = await withAdmin(bootstrap, async (admin) => {
        await requireTopics(admin, { source: [topic] }, clientOptions);
        const [meta] = await admin.fetchTopicMetadata({ topics: [topic] });
        const committed = await admin.fetchTopicOffsets(topic, { isolationLevel: KafkaJS.IsolationLevel.READ_COMMITTED });
        return {
          topic,
          partitions: (meta?.partitions ?? [])
            .map((p) => {
              const o = committed.find((c) => c.partition === p.partitionId);
              return { partition: p.partitionId, leader: p.leader, replicas: p.replicas, isr: p.isr, low: Number(o?.low ?? 0), high: Number(o?.high ?? 0), lastStable: Number(o?.offset ?? 0) };
            })
            .sort((a, b) => a.partition - b.partition),
        };
      }, clientOptions);
      if (opts.json) {
        console.log(JSON.stringify(described, null, 2));
        return;
      }
      console.log(`topic ${topic}  partitions ${described.partitions.length}`);
      for (const p of described.partitions) console.log(`  partition ${p.partition}  leader ${p.leader}  replicas ${p.replicas.join(',')}  isr ${p.isr.join(',')}  offsets ${p.low}..${p.high} (last stable ${p.lastStable})`);
    });
}
