import type { Command } from 'commander';
import { defineCommand } from './commands.ts';
import { compile } from '../graph/compile.ts';
import { loadTopology } from '../dsl/load.ts';
import { applyReset, planReset, type ResetPlan } from './reset-plan.ts';
import { addGroupOptions, groupConfig, type GroupFlags } from './status.ts';

interface ResetFlags extends GroupFlags {
  dryRun?: boolean;
  deleteDeadLetterTopic?: boolean;
}

/** The plan as `reset` prints it: what it did, or with --dry-run what it would do. */
export function formatResetPlan(plan: ResetPlan, dryRun: boolean): string {
  const will = (done: string, todo: string): string => (dryRun ? todo : done);
  const out = [`${dryRun ? 'dry run: nothing is changed. ' : ''}reset of application ${plan.appId} (consumer group ${plan.appId})`, ''];
  out.push(`input offsets ${will('set', 'to set')} to the beginning:`);
  for (const o of plan.offsets) out.push(`  ${o.topic}-${o.partition}: ${o.committed === undefined ? 'nothing committed' : `committed ${o.committed}`} -> ${o.beginning}`);
  if (plan.offsets.length === 0) out.push('  (no input topic exists)');
  out.push(`internal topics ${will('deleted', 'to delete')}:`);
  for (const t of plan.deleteTopics) out.push(`  ${t.name} (${t.kind})${t.exists ? '' : ' - not on the cluster, nothing to delete'}`);
  out.push(`local state ${will('deleted', 'to delete')}:`, `  ${plan.stateDir}${plan.stateDirExists ? '' : ' - not there, nothing to delete'}`);
  out.push('kept as they are:', ...plan.keptTopics.map((t) => `  ${t.name} (${t.kind}${t.kind === 'dead-letter' ? '; --delete-dead-letter-topic deletes it if the application owns it' : ''})`));
  return `${out.join('\n')}\n`;
}

export function registerReset(program: Command, out: (text: string) => void = (t) => process.stdout.write(t)): void {
  addGroupOptions(
    defineCommand(program, 'reset'),
  )
    .option('--dry-run', 'print the offsets, topics and state directory it would touch, and change nothing')
    .option('--delete-dead-letter-topic', "delete the application's own dead-letter topic too (<app-id>-dlq; kept by default)")
    .option('--state-dir <dir>', 'the workers\' stateDir (env ONCEFLOW_STATE_DIR; default: <tmp>/onceflow-state)')
    .action(async (file: string, opts: ResetFlags) => {
      const builder = await loadTopology(file);
      const config = await groupConfig(opts, builder.options.appId);
      const target = {
        topology: compile(builder, { appId: config.appId }),
        bootstrap: config.bootstrap,
        kafka: config.kafka,
        stateDir: config.stateDir,
        deleteDeadLetterTopic: opts.deleteDeadLetterTopic === true,
      };
      const dryRun = opts.dryRun === true;
      out(formatResetPlan(dryRun ? await planReset(target) : await applyReset(target), dryRun));
    });
}
