import { randomUUID } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import type { KafkaConsumer } from '@confluentinc/kafka-javascript';
import { connectConsumer, consumeBatch, disconnect } from '../../src/kafka/clients.ts';
import type { GroupOffsets } from '../../src/kafka/group-offsets.ts';
import type { AdminClient } from '../../src/kafka/admin.ts';

/**
 * What a downstream read_committed consumer sees of a topic while the benchmark runs: when the first
 * and the last record became visible to it, and for records stamped at or after `latencyFrom`
 * (the probe records produced after the backlog), visibility time minus the record's timestamp.
 * Processors copy the input record's timestamp to their outputs (onceflow, Kafka Streams and the
 * copy loop all do), so that difference is input timestamp → visible downstream.
 */
export class OutputReader {
  records = 0;
  firstVisibleAt: number | undefined;
  lastVisibleAt: number | undefined;
  /** Visible-at of each record, in arrival order: throughput over any window can be cut afterwards. */
  private readonly latencies: number[] = [];
  latencyFrom = Number.POSITIVE_INFINITY;
  private consumer: KafkaConsumer | undefined;
  private loop: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly bootstrap: string,
    private readonly topic: string,
    private readonly partitions: number,
  ) {}

  async start(): Promise<void> {
    this.consumer = await connectConsumer({
      'bootstrap.servers': this.bootstrap,
      'group.id': `bench-reader-${randomUUID()}`,
      'enable.auto.commit': false,
      'isolation.level': 'read_committed',
      'auto.offset.reset': 'earliest',
      // Short fetch waits: the reader's own polling delay is part of every latency it reports.
      'fetch.wait.max.ms': 5,
      'fetch.min.bytes': 1,
    });
    // consume(n) otherwise waits up to the timeout for *each* of the n messages: under a steady trickle
    // it would sit on a batch until n arrived, adding seconds to every latency it reports.
    const c = this.consumer as unknown as { setDefaultConsumeTimeout(ms: number): void; setDefaultIsTimeoutOnlyForFirstMessage(b: boolean): void };
    c.setDefaultConsumeTimeout(100);
    c.setDefaultIsTimeoutOnlyForFirstMessage(true);
    this.consumer.assign(Array.from({ length: this.partitions }, (_, partition) => ({ topic: this.topic, partition, offset: 0 })));
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    const c = this.consumer!;
    while (!this.stopped) {
      const batch = await consumeBatch(c, 5000).catch(() => []);
      if (batch.length === 0) continue;
      const now = Date.now();
      this.firstVisibleAt ??= now;
      this.lastVisibleAt = now;
      this.records += batch.length;
      for (const m of batch) {
        const ts = m.timestamp ?? 0;
        if (ts >= this.latencyFrom) this.latencies.push(now - ts);
      }
    }
  }

  /** Ms since the last record became visible (infinite before the first). */
  idleMs(): number {
    return this.lastVisibleAt === undefined ? Number.POSITIVE_INFINITY : Date.now() - this.lastVisibleAt;
  }

  latencySamples(): readonly number[] {
    return this.latencies;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
    if (this.consumer) await disconnect(this.consumer);
  }
}

export function percentile(values: readonly number[], p: number): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const at = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[at];
}

const CLK_TCK = 100; // getconf CLK_TCK on Linux x86-64; /proc/<pid>/stat counts in these ticks.

export interface ProcSample {
  readonly cpuSeconds: number;
  readonly peakRssMb: number;
}

interface ProcStat {
  readonly parent: number;
  /** utime+stime, plus cutime+cstime: the children it has reaped. */
  readonly cpuTicks: number;
  readonly rssKb: number;
  readonly peakRssKb: number;
}

/** The numeric fields of /proc/<pid>/stat from field 3 (state) on; the command name (field 2) may contain spaces. */
function statFields(pid: number): number[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number);
}

function readProc(pid: number): ProcStat | undefined {
  try {
    const fields = statFields(pid);
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
    return { parent: fields[1] ?? 0, cpuTicks: (fields[11] ?? 0) + (fields[12] ?? 0) + (fields[13] ?? 0) + (fields[14] ?? 0), rssKb: kb('VmRSS'), peakRssKb: kb('VmHWM') };
  } catch {
    return undefined;
  }
}

/** CPU (all threads, reaped children included) and VmHWM of a live process; undefined once it has gone. */
export function sampleProc(pid: number): ProcSample | undefined {
  const p = readProc(pid);
  return p && { cpuSeconds: p.cpuTicks / CLK_TCK, peakRssMb: p.peakRssKb / 1024 };
}

/**
 * CPU and peak RSS of a contender's whole process tree (a JVM or node process, its threads, and any
 * child process it starts). A process's own VmHWM is its exact peak, but the tree's peak is the
 * largest sum of its members' RSS at one moment, so that is sampled; a tree of one process reports
 * its VmHWM.
 */
export class ProcessTree {
  private readonly members = new Set<number>();
  private peakKb = 0;
  private samples = 0;

  constructor(private readonly root: number) {
    this.members.add(root);
  }

  /** Undefined once the root has gone. */
  sample(): ProcSample | undefined {
    // Scanning /proc for new children costs more than reading the known members: once a second.
    if (this.samples++ % 5 === 0) this.discover();
    let cpuTicks = 0;
    let rssKb = 0;
    let rootPeakKb = 0;
    for (const pid of this.members) {
      const p = readProc(pid);
      if (!p) {
        if (pid === this.root) return undefined;
        this.members.delete(pid);
        continue;
      }
      cpuTicks += p.cpuTicks;
      rssKb += p.rssKb;
      if (pid === this.root) rootPeakKb = p.peakRssKb;
    }
    this.peakKb = Math.max(this.peakKb, rssKb, rootPeakKb);
    return { cpuSeconds: cpuTicks / CLK_TCK, peakRssMb: this.peakKb / 1024 };
  }

  private discover(): void {
    const parents = new Map<number, number>();
    for (const entry of readdirSync('/proc')) {
      const pid = Number(entry);
      if (!Number.isInteger(pid) || this.members.has(pid)) continue;
      try {
        parents.set(pid, statFields(pid)[1] ?? 0);
      } catch {
        /* gone */
      }
    }
    // Grandchildren may be listed before their parent joins the tree: repeat until nothing joins.
    let grew = true;
    while (grew) {
      grew = false;
      for (const [pid, parent] of parents) {
        if (this.members.has(parent)) {
          this.members.add(pid);
          parents.delete(pid);
          grew = true;
        }
      }
    }
  }
}

/** Sum over partitions of the end offsets of a topic (records + transaction markers). */
export async function endOffsets(admin: AdminClient, topic: string): Promise<Map<number, number>> {
  const offsets = await admin.fetchTopicOffsets(topic);
  return new Map(offsets.map((o) => [o.partition, Number(o.high)]));
}

export interface Progress {
  /** Input records the group has committed past (per partition capped at the target end). */
  readonly committed: number;
  readonly done: boolean;
  readonly behind: number;
}

/**
 * Where the contender's group stands. Done means: committed at the end of every input partition, and
 * on every internal topic the group reads (its repartition topics) at most
 * one offset short of the end — the commit marker a transactional producer leaves after its last record.
 * Each contender commits its input offsets only with or after the outputs of those records, so done
 * means every input record has gone all the way through.
 */
export async function groupProgress(admin: AdminClient, group: GroupOffsets, input: string, ends: ReadonlyMap<number, number>, internal: readonly string[] = []): Promise<Progress> {
  const internalEnds = new Map<string, Map<number, number>>();
  for (const t of internal) internalEnds.set(t, await endOffsets(admin, t));
  const got = await group.fetch([
    ...[...ends.keys()].map((partition) => ({ topic: input, partition })),
    ...[...internalEnds].flatMap(([topic, m]) => [...m.keys()].map((partition) => ({ topic, partition }))),
  ]);
  let committed = 0;
  let behind = 0;
  let done = true;
  const inputCommitted = new Map<number, number>();
  for (const o of got) {
    if (o.topic !== input) continue;
    committed += Math.min(Math.max(o.offset, 0), ends.get(o.partition) ?? 0);
    inputCommitted.set(o.partition, o.offset);
  }
  for (const [p, end] of ends) {
    const c = inputCommitted.get(p) ?? -1;
    if (c < end) {
      done = false;
      behind += end - Math.max(c, 0);
    }
  }
  if (done) {
    for (const topic of internal) {
      const at = new Map<number, number>();
      for (const o of got) if (o.topic === topic) at.set(o.partition, o.offset);
      for (const [partition, high] of internalEnds.get(topic) ?? new Map<number, number>()) {
        const c = Math.max(at.get(partition) ?? 0, 0);
        if (high > 0 && c < high - 1) {
          done = false;
          behind += high - 1 - c;
        }
      }
    }
  }
  return { committed, done, behind };
}
