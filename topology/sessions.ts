import { TopologyBuilder } from '../src/dsl/topology-builder.ts';
import { SessionWindows } from '../src/dsl/session-windows.ts';
import { jsonSerde, stringSerde } from '../src/serdes/index.ts';

export interface SessionsOptions {
  readonly input?: string;
  readonly output?: string;
  readonly appId?: string;
}

/** A click: who, and when it happened (event time, in ms of the feed's own clock). */
export interface Click {
  readonly user: string;
  readonly at: number;
}

export const SESSIONS_DEFAULTS = { input: 'clicks', output: 'user-sessions', appId: 'sessions' } as const;
/** Clicks of a user closer than this form one session. */
export const SESSION_GAP_MS = 30;
/** How far behind stream time a click may arrive and still count. */
export const SESSION_GRACE_MS = 10;

/**
 * Clicks per user session. Every click updates its session (a bridging click merges two sessions, and
 * the merged-away ones are deleted: a null value); the session store's changelog is written in the
 * transaction. Event time comes from the click, so a replay after a crash sees the same times.
 */
export function sessionsTopology(opts: SessionsOptions = {}): TopologyBuilder {
  const o = { ...SESSIONS_DEFAULTS, ...opts };
  const app = new TopologyBuilder({ appId: o.appId });
  app
    .stream(o.input, { key: stringSerde, value: jsonSerde<Click>(), timestamp: (_key, click) => click.at })
    .groupByKey()
    .windowedBy(SessionWindows.withInactivityGap(SESSION_GAP_MS).grace(SESSION_GRACE_MS))
    .count({ name: 'sessions' })
    .toStream()
    .to(o.output, { value: jsonSerde<number | null>({ nullable: true }) });
  return app;
}

/** Topic names may come from the environment so that replicas, tests and the chaos harness use their own. */
export default sessionsTopology({
  ...(process.env.ONCEFLOW_SESSIONS_INPUT ? { input: process.env.ONCEFLOW_SESSIONS_INPUT } : {}),
  ...(process.env.ONCEFLOW_SESSIONS_OUTPUT ? { output: process.env.ONCEFLOW_SESSIONS_OUTPUT } : {}),
});
