import { TopologyBuilder } from '../src/dsl/topology-builder.ts';
import { countSerde } from '../src/state/internal-serdes.ts';
import { jsonSerde, stringSerde } from '../src/serdes/index.ts';
import type { Click } from './sessions.ts';

export interface HeartbeatsOptions {
  readonly input?: string;
  readonly output?: string;
  readonly appId?: string;
}

export const HEARTBEATS_DEFAULTS = { input: 'clicks', output: 'click-heartbeats', appId: 'heartbeats' } as const;
/** A `tick-<partition>` record each time stream time crosses a multiple of this. */
export const TICK_EVERY_MS = 100;
/** A `beat-<partition>` record, numbered 1, 2, 3, ... in the store, this often on the wall clock. */
export const BEAT_EVERY_MS = 250;

/**
 * A processor with both kinds of punctuation: it counts clicks per user (a store), on stream time
 * announces each boundary it crosses, and on the wall clock numbers heartbeats in its store. The
 * store and the outputs commit together, so the heartbeats of a partition read 1, 2, 3, ... without
 * a gap or a repeat however often the worker is killed.
 */
export function heartbeatsTopology(opts: HeartbeatsOptions = {}): TopologyBuilder {
  const o = { ...HEARTBEATS_DEFAULTS, ...opts };
  const app = new TopologyBuilder({ appId: o.appId });
  app
    .stream(o.input, { key: stringSerde, value: jsonSerde<Click>(), timestamp: (_key, click) => click.at })
    .process<string, number, string, number>({
      name: 'heartbeats',
      state: { key: stringSerde, value: countSerde, store: 'heartbeats' },
      process: (user, _click, ctx) => {
        const clicks = (ctx.store.get(user ?? '') ?? 0) + 1;
        ctx.store.put(user ?? '', clicks);
        ctx.forward(user ?? '', clicks);
      },
      punctuate: [
        { on: 'stream-time', everyMs: TICK_EVERY_MS, run: (time, ctx) => ctx.forward(`tick-${ctx.partition}`, time) },
        {
          on: 'wall-clock',
          everyMs: BEAT_EVERY_MS,
          run: (_time, ctx) => {
            const key = `beat-${ctx.partition}`;
            const beat = (ctx.store.get(key) ?? 0) + 1;
            ctx.store.put(key, beat);
            ctx.forward(key, beat);
          },
        },
      ],
      key: stringSerde,
      value: jsonSerde<number>(),
    })
    .to(o.output);
  return app;
}

/** Topic names may come from the environment so that replicas, tests and the chaos harness use their own. */
export default heartbeatsTopology({
  ...(process.env.ONCEFLOW_HEARTBEATS_INPUT ? { input: process.env.ONCEFLOW_HEARTBEATS_INPUT } : {}),
  ...(process.env.ONCEFLOW_HEARTBEATS_OUTPUT ? { output: process.env.ONCEFLOW_HEARTBEATS_OUTPUT } : {}),
});
