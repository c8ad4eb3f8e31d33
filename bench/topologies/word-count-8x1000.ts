import { TopologyBuilder } from '../../src/dsl/topology-builder.ts';
import { jsonSerde, stringSerde } from '../../src/serdes/index.ts';
import { splitWords } from '../../processors/words.ts';

/** A ~200-byte JSON document whose `text` holds 8 words of a 1,000-word vocabulary (bench/lib/models.ts). */
export interface Doc {
  readonly id: string;
  readonly user: string;
  readonly text: string;
  readonly note: string;
}

export const WORD_COUNT_8X1000_DEFAULTS = { input: 'docs', output: 'doc-word-counts', appId: 'word-count-8x1000' } as const;

/**
 * Word count where the store and the repartition dominate: every record fans out into 8 repartition
 * records over 1,000 keys. The Kafka Streams peer (wordCount8x1000) does the same.
 */
export function wordCount8x1000Topology(opts: { input?: string; output?: string; appId?: string } = {}): TopologyBuilder {
  const o = { ...WORD_COUNT_8X1000_DEFAULTS, ...opts };
  const app = new TopologyBuilder({ appId: o.appId });
  app
    .stream(o.input, { key: stringSerde, value: jsonSerde<Doc>() })
    .flatMapValues((doc) => splitWords(doc.text))
    .groupBy((_key, word) => word, { key: stringSerde, value: stringSerde })
    .count({ name: 'counts' })
    .toStream()
    .to(o.output, { key: stringSerde, value: jsonSerde<number>() });
  return app;
}

export default wordCount8x1000Topology({
  input: process.env.ONCEFLOW_BENCH_INPUT ?? WORD_COUNT_8X1000_DEFAULTS.input,
  output: process.env.ONCEFLOW_BENCH_OUTPUT ?? WORD_COUNT_8X1000_DEFAULTS.output,
});
