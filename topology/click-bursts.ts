import { TopologyBuilder } from '../src/dsl/topology-builder.ts';
import { slidingWindow } from '../src/dsl/sliding-windows.ts';
import { jsonSerde, stringSerde } from '../src/serdes/index.ts';
import type { Click } from './sessions.ts';

export interface ClickBurstsOptions {
  readonly input?: string;
  readonly output?: string;
  readonly appId?: string;
}

export const CLICK_BURSTS_DEFAULTS = { input: 'clicks', output: 'click-bursts', appId: 'click-bursts' } as const;
/** Clicks of a user at most this far apart are in one window. */
export const BURST_WINDOW_MS = 20;
/** How far behind stream time a click may arrive and still count in every window it belongs to. */
export const BURST_GRACE_MS = 50;

/**
 * Clicks per user in every window of 20 ms that a user's clicks define (sliding windows): the window
 * ending at each click, and the one starting just after a click that has a later one within 20 ms.
 * A burst detector reads the count of the window ending at a click as "clicks in the 20 ms up to this
 * one". The window store's changelog is written in the transaction; event time comes from the click.
 */
export function clickBurstsTopology(opts: ClickBurstsOptions = {}): TopologyBuilder {
  const o = { ...CLICK_BURSTS_DEFAULTS, ...opts };
  const app = new TopologyBuilder({ appId: o.appId });
  app
    .stream(o.input, { key: stringSerde, value: jsonSerde<Click>(), timestamp: (_key, click) => click.at })
    .groupByKey()
    .windowedBy(slidingWindow(BURST_WINDOW_MS, { graceMs: BURST_GRACE_MS }))
    .count({ name: 'bursts' })
    .toStream()
    .to(o.output, { value: jsonSerde<number>() });
  return app;
}

/** Topic names may come from the environment so that replicas, tests and the chaos harness use their own. */
export default clickBurstsTopology({
  ...(process.env.ONCEFLOW_BURSTS_INPUT ? { input: process.env.ONCEFLOW_BURSTS_INPUT } : {}),
  ...(process.env.ONCEFLOW_BURSTS_OUTPUT ? { output: process.env.ONCEFLOW_BURSTS_OUTPUT } : {}),
});
