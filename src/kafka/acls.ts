import { OnceflowError } from '../errors.ts';
import type { CompiledTopology } from '../graph/compiled.ts';

export class AclSpecError extends OnceflowError {
  readonly code = 'ACL_SPEC_INVALID';
}

export const ACL_OPERATIONS = ['READ', 'WRITE', 'CREATE', 'DESCRIBE', 'IDEMPOTENT_WRITE'] as const;
export const ACL_RESOURCE_TYPES = ['TOPIC', 'GROUP', 'TRANSACTIONAL_ID', 'CLUSTER'] as const;
export const ACL_PATTERN_TYPES = ['LITERAL', 'PREFIXED'] as const;

/** One ALLOW rule, in Kafka's own vocabulary so it maps 1:1 onto an AclBinding. */
export interface AclEntry {
  readonly principal: string;
  readonly operation: (typeof ACL_OPERATIONS)[number];
  readonly resourceType: (typeof ACL_RESOURCE_TYPES)[number];
  readonly patternType: (typeof ACL_PATTERN_TYPES)[number];
  readonly name: string;
  /** Which part of the topology needs it: printed as a comment, ignored when applied. */
  readonly reason?: string;
}

export interface AclOptions {
  readonly principal: string;
}

/**
 * The least-privilege grants of one application. READ and WRITE imply DESCRIBE in Kafka; DESCRIBE is
 * still listed on outputs and transactional ids so an operator reading the list sees it was meant.
 * No IDEMPOTENT_WRITE on the cluster: since Kafka 3.0 (KIP-679) WRITE on a topic or a transactional
 * id is enough for an idempotent producer.
 */
export function aclsForTopology(topology: CompiledTopology, opts: AclOptions): AclEntry[] {
  if (!/^[A-Za-z][A-Za-z0-9_-]*:\S+$/.test(opts.principal)) {
    throw new AclSpecError(`principal "${opts.principal}" must look like User:<name>`);
  }
  // Compile with the deployment's app id: group, transactional ids and internal topics all derive from it.
  const appId = topology.appId;
  const prefix = `${appId}-`;
  const out: AclEntry[] = [];
  const add = (operations: readonly AclEntry['operation'][], resourceType: AclEntry['resourceType'], patternType: AclEntry['patternType'], name: string, reason: string) => {
    for (const operation of operations) out.push({ principal: opts.principal, operation, resourceType, patternType, name, reason });
  };
  const sorted = (kind: string) => [...new Set(topology.topics.filter((t) => t.kind === kind && !t.internal).map((t) => t.name))].sort();
  for (const t of sorted('source')) add(['READ'], 'TOPIC', 'LITERAL', t, 'input topic');
  for (const t of sorted('sink')) add(['WRITE', 'DESCRIBE'], 'TOPIC', 'LITERAL', t, 'output topic');
  // Every worker creates and writes the topology record (`<appId>-topology`), so the prefix is needed even without other internal topics.
  add(['READ', 'WRITE', 'CREATE'], 'TOPIC', 'PREFIXED', prefix, 'internal topics (changelog, repartition, dead-letter, topology record), created by the worker');
  // A dead-letter topic the topology names is not the worker's to create: it must exist, and is only written.
  for (const t of sorted('dead-letter')) add(['WRITE', 'DESCRIBE'], 'TOPIC', 'LITERAL', t, 'dead-letter topic');
  add(['READ'], 'GROUP', 'LITERAL', appId, 'consumer group (the app id); offsets commit inside the transaction');
  add(['WRITE', 'DESCRIBE'], 'TRANSACTIONAL_ID', 'PREFIXED', prefix, 'transactional ids <appId>-<instanceId>');
  return out;
}

/** One line per ACL: `principal operation resourceType patternType name`, with `#` comments for the reasons. */
export function formatAcls(acls: readonly AclEntry[]): string {
  const lines: string[] = [];
  let lastReason: string | undefined;
  for (const a of acls) {
    if (a.reason && a.reason !== lastReason) lines.push(`# ${a.reason}`);
    lastReason = a.reason;
    lines.push([a.principal, a.operation, a.resourceType, a.patternType, a.name].join(' '));
  }
  return `${lines.join('\n')}\n`;
}

function oneOf<T extends string>(values: readonly T[], value: string | undefined, what: string, line: number): T {
  const upper = value?.toUpperCase();
  const found = values.find((v) => v === upper);
  if (!found) throw new AclSpecError(`line ${line}: ${what} "${value ?? ''}" is not one of ${values.join(', ')}`);
  return found;
}

/** Reads what formatAcls prints (blank lines and comments skipped). */
export function parseAcls(text: string): AclEntry[] {
  const out: AclEntry[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const fields = line.split(/\s+/);
    if (fields.length !== 5) throw new AclSpecError(`line ${i + 1}: expected "principal operation resourceType patternType name", got "${line}"`);
    const [principal, operation, resourceType, patternType, name] = fields as [string, string, string, string, string];
    out.push({
      principal,
      operation: oneOf(ACL_OPERATIONS, operation, 'operation', i + 1),
      resourceType: oneOf(ACL_RESOURCE_TYPES, resourceType, 'resource type', i + 1),
      patternType: oneOf(ACL_PATTERN_TYPES, patternType, 'pattern type', i + 1),
      name,
    });
  });
  return out;
}
