import { TopologyBuilder } from '../src/dsl/topology-builder.ts';
import { jsonSerde, stringSerde } from '../src/serdes/index.ts';
import { splitWords } from '../processors/words.ts';

export interface WordCountOptions {
  readonly input?: string;
  readonly output?: string;
  readonly appId?: string;
}

export const WORD_COUNT_DEFAULTS = { input: 'lines', output: 'word-counts', appId: 'word-count' } as const;

/** Counts words across all lines; re-keying by word repartitions so each word is counted in one task. */
export function wordCountTopology(opts: WordCountOptions = {}): TopologyBuilder {
  const o = { ...WORD_COUNT_DEFAULTS, ...opts };
  const app = new TopologyBuilder({ appId: o.appId });
  app
    .stream(o.input, { key: stringSerde, value: stringSerde })
    .flatMapValues(splitWords)
    .groupBy((_key, word) => word, { key: stringSerde, value: stringSerde })
    .count({ name: 'counts' })
    .toStream()
    .to(o.output, { key: stringSerde, value: jsonSerde<number>() });
  return app;
}

/** Topic names may come from the environment so that replicas, tests and the chaos harness use their own. */
export default wordCountTopology({
  ...(process.env.ONCEFLOW_WORDS_INPUT ? { input: process.env.ONCEFLOW_WORDS_INPUT } : {}),
  ...(process.env.ONCEFLOW_WORDS_OUTPUT ? { output: process.env.ONCEFLOW_WORDS_OUTPUT } : {}),
});
