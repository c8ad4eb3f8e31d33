import type { AdminClient } from '../kafka/admin.ts';
import { groupStatus, type GroupStatus, type LagProbe } from '../cli/status.ts';
import { StateMachine, type TransitionTable } from '../runtime/base/state-machine.ts';
import type { DeadLetterFeed, DeadLetterSummary } from './dead-letter-feed.ts';
import { SampleWindow, scrapeMember, type MemberSample, type Scrape } from './member-metrics.ts';

/** A member's own numbers, from its `/metrics`, or why there are none. */
export type MemberMetricsView =
  | {
      readonly reachable: true;
      readonly url: string;
      readonly state: string | undefined;
      readonly commitsPerSecond: number | undefined;
      readonly recordsInPerSecond: number | undefined;
      readonly recordsOutPerSecond: number | undefined;
      readonly transactionsCommitted: number;
      readonly aborts: number;
      readonly fencings: number;
      readonly rebalances: number;
      readonly restoreRemaining: number;
      readonly standbyTasks: number;
    }
  | { readonly reachable: false; readonly reason: string };

export interface MemberView {
  readonly memberId: string;
  readonly clientId: string;
  readonly host: string;
  readonly partitions: readonly string[];
  /** From the commit metadata stored with the member's offsets (the broker's view), else from its metrics. */
  readonly lastCommitAt: number | undefined;
  readonly metrics: MemberMetricsView;
}

export interface PartitionView {
  readonly topic: string;
  readonly partition: number;
  readonly committed: number | undefined;
  readonly end: number;
  /** `recordsBehind`, as `onceflow status` shows it: commit markers and aborted records are not lag. */
  readonly lag: number | undefined;
  readonly owner: string | undefined;
  readonly lastCommitAt: number | undefined;
  readonly committedBy: string | undefined;
  /** Lag at each of the last refreshes, oldest first. */
  readonly lagHistory: readonly number[];
}

export interface EosSummary {
  /** Summed over the members whose metrics were read; undefined when none was. */
  readonly committedLastMinute: number | undefined;
  readonly abortedLastMinute: number | undefined;
  readonly membersCounted: number;
}

export interface LiveSnapshot {
  readonly appId: string;
  readonly at: number;
  readonly group: { readonly state: string; readonly members: number; readonly assignmentChanges: number };
  readonly members: readonly MemberView[];
  readonly partitions: readonly PartitionView[];
  readonly deadLetters: DeadLetterSummary;
  readonly eos: EosSummary;
  /** What failed on this refresh (the broker, a member's port), in words; the rest is still shown. */
  readonly problems: readonly string[];
}

export interface LiveStateOptions {
  readonly appId: string;
  readonly admin: AdminClient;
  readonly deadLetters: Pick<DeadLetterFeed, 'topic' | 'following' | 'follow' | 'takeError' | 'summary'>;
  /** `/metrics` URLs of workers, matched to members by the transactional id they report. */
  readonly memberUrls?: readonly string[];
  /** Else `http://<member host>:<port>/metrics` for each member (one port for every replica, as in a Deployment). */
  readonly memberPort?: number;
  /** Looks past commit markers, so that a caught-up group shows a lag of 0 (the same as `onceflow status`). */
  readonly probe: LagProbe;
  readonly intervalMs?: number;
  readonly scrapeTimeoutMs?: number;
  readonly now?: () => number;
}

const HISTORY = 30;

type CollectorState = 'CREATED' | 'RUNNING' | 'STOPPED';
const COLLECTOR_MOVES: TransitionTable<CollectorState> = { CREATED: ['RUNNING', 'STOPPED'], RUNNING: ['STOPPED'], STOPPED: [] };

/**
 * Refreshes an application's live state every `intervalMs` (default 1 s): the group from the broker,
 * each member's own numbers from its `/metrics`, the dead letters from their topic. Listeners get
 * each snapshot; a failed refresh is a snapshot with a problem, not an error.
 */
export class LiveState {
  readonly #lifecycle = new StateMachine<CollectorState>('console-collector', 'CREATED', COLLECTOR_MOVES);
  readonly #listeners = new Set<(s: LiveSnapshot) => void>();
  readonly #windows = new Map<string, SampleWindow>();
  readonly #lagHistory = new Map<string, number[]>();
  #latest: LiveSnapshot | undefined;
  #previousAssignment = '';
  #assignmentChanges = 0;
  #timer: NodeJS.Timeout | undefined;
  #refreshing: Promise<void> | undefined;
  readonly #now: () => number;

  constructor(private readonly options: LiveStateOptions) {
    this.#now = options.now ?? Date.now;
  }

  get latest(): LiveSnapshot | undefined {
    return this.#latest;
  }

  subscribe(listener: (s: LiveSnapshot) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  start(): void {
    this.#lifecycle.to('RUNNING', 'start');
    const loop = (): void => {
      this.#refreshing = this.refresh().then(() => undefined).finally(() => {
        if (this.#lifecycle.is('RUNNING')) this.#timer = setTimeout(loop, this.options.intervalMs ?? 1_000);
      });
    };
    loop();
  }

  async stop(): Promise<void> {
    if (this.#lifecycle.is('STOPPED')) return;
    this.#lifecycle.to('STOPPED', 'stop');
    clearTimeout(this.#timer);
    await this.#refreshing;
  }

  /** One refresh; public so a test can drive it without the timer. */
  async refresh(): Promise<LiveSnapshot> {
    const problems: string[] = [];
    const feed = this.options.deadLetters;
    let group: GroupStatus | undefined;
    try {
      group = await groupStatus(this.options.admin, this.options.appId, this.options.probe);
      if (!feed.following && (await this.options.admin.listTopics()).includes(feed.topic)) feed.follow();
    } catch (e) {
      problems.push(`reading the group from the broker failed: ${e instanceof Error ? e.message : String(e)}`);
    }
    const feedError = feed.takeError();
    if (feedError !== undefined) problems.push(feedError);
    const members = group ? await this.#members(group, problems) : (this.#latest?.members ?? []);
    const partitions = group ? this.#partitions(group) : (this.#latest?.partitions ?? []);
    const assignment = JSON.stringify(members.map((m) => [m.memberId, m.partitions]));
    if (group && assignment !== this.#previousAssignment) {
      if (this.#previousAssignment !== '') this.#assignmentChanges++;
      this.#previousAssignment = assignment;
    }
    const now = this.#now();
    const counted = members.filter((m) => m.metrics.reachable).map((m) => this.#windows.get(m.clientId));
    const sum = (field: 'transactionsCommitted' | 'transactionsAborted'): number | undefined =>
      counted.length === 0 ? undefined : counted.reduce((n, w) => n + (w?.increase(field) ?? 0), 0);
    const snapshot: LiveSnapshot = {
      appId: this.options.appId,
      at: now,
      group: { state: group?.state ?? this.#latest?.group.state ?? 'unknown', members: members.length, assignmentChanges: this.#assignmentChanges },
      members,
      partitions,
      deadLetters: feed.summary(now),
      eos: { committedLastMinute: sum('transactionsCommitted'), abortedLastMinute: sum('transactionsAborted'), membersCounted: counted.length },
      problems,
    };
    this.#latest = snapshot;
    for (const l of this.#listeners) l(snapshot);
    return snapshot;
  }

  async #members(group: GroupStatus, problems: string[]): Promise<MemberView[]> {
    const timeout = this.options.scrapeTimeoutMs ?? 1_500;
    const explicit = await Promise.all((this.options.memberUrls ?? []).map((url) => scrapeMember(url, timeout, this.#now)));
    const byClient = new Map<string, Scrape & { ok: true }>();
    for (const s of explicit) {
      if (s.ok && s.sample.transactionalId !== undefined) byClient.set(s.sample.transactionalId, s);
      else if (!s.ok) problems.push(`worker metrics at ${s.url} unreachable: ${s.error}`);
    }
    const views = await Promise.all(
      group.members.map(async (m): Promise<MemberView> => {
        let scrape: Scrape | undefined = byClient.get(m.clientId);
        if (!scrape && this.options.memberPort !== undefined) scrape = await scrapeMember(`http://${m.host}:${this.options.memberPort}/metrics`, timeout, this.#now);
        const metrics = scrape ? this.#metricsView(m.clientId, scrape) : { reachable: false as const, reason: 'no metrics URL for this member (pass --worker-url or --worker-port)' };
        const fromMetrics = scrape?.ok && scrape.sample.lastCommitAt > 0 ? scrape.sample.lastCommitAt : undefined;
        const lastCommitAt = Math.max(m.lastCommitAt ?? 0, fromMetrics ?? 0) || undefined;
        return { memberId: m.memberId, clientId: m.clientId, host: m.host, partitions: m.partitions, lastCommitAt, metrics };
      }),
    );
    const members = new Set(group.members.map((m) => m.clientId));
    for (const id of this.#windows.keys()) if (!members.has(id)) this.#windows.delete(id);
    return views;
  }

  #metricsView(clientId: string, scrape: Scrape): MemberMetricsView {
    if (!scrape.ok) return { reachable: false, reason: `${scrape.url} unreachable (${scrape.error}); showing the broker's view only` };
    const window = this.#windows.get(clientId) ?? new SampleWindow();
    this.#windows.set(clientId, window);
    const s: MemberSample = scrape.sample;
    window.add(s);
    return {
      reachable: true,
      url: scrape.url,
      state: s.state,
      commitsPerSecond: window.ratePerSecond('transactionsCommitted'),
      recordsInPerSecond: window.ratePerSecond('recordsConsumed'),
      recordsOutPerSecond: window.ratePerSecond('recordsProduced'),
      transactionsCommitted: s.transactionsCommitted,
      aborts: s.transactionsAborted,
      fencings: s.fencings,
      rebalances: s.rebalances,
      restoreRemaining: s.restoreRemaining,
      standbyTasks: s.standbyTasks,
    };
  }

  #partitions(group: GroupStatus): PartitionView[] {
    return group.partitions.map((p) => {
      const key = `${p.topic}-${p.partition}`;
      const history = this.#lagHistory.get(key) ?? [];
      if (p.lag !== undefined) history.push(p.lag);
      if (history.length > HISTORY) history.splice(0, history.length - HISTORY);
      this.#lagHistory.set(key, history);
      return { topic: p.topic, partition: p.partition, committed: p.committed, end: p.end, lag: p.lag, owner: p.clientId, lastCommitAt: p.lastCommitAt, committedBy: p.committedBy, lagHistory: [...history] };
    });
  }
}
