import type { Command } from 'commander';
import { defineCommand } from './commands.ts';
import { loadTopology } from '../dsl/load.ts';
import { compile } from '../graph/compile.ts';
import { aclsForTopology, formatAcls, type AclEntry } from '../kafka/acls.ts';

/** The ACLs a principal needs to run a topology file, compiled with the deployment's app id. */
export async function aclsForFile(file: string, opts: { principal: string; appId?: string }): Promise<AclEntry[]> {
  const topology = compile(await loadTopology(file), opts.appId ? { appId: opts.appId } : {});
  return aclsForTopology(topology, { principal: opts.principal });
}

export function registerAcls(program: Command, io: { readonly write?: (text: string) => void } = {}): void {
  const write = io.write ?? ((text: string) => void process.stdout.write(text));
  defineCommand(program, 'acls')
    .requiredOption('--principal <principal>', 'the worker principal, e.g. User:orders')
    .option('--app-id <id>', "the deployment's app id (group, transactional-id prefix and internal topics derive from it)")
    .option('--json', 'print a JSON array instead')
    .action(async (file: string, opts: { principal: string; appId?: string; json?: boolean }) => {
      const list = await aclsForFile(file, opts);
      write(opts.json ? `${JSON.stringify(list, null, 2)}\n` : formatAcls(list));
    });
}
