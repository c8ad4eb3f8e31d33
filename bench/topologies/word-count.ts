/**
 * topology/word-count.ts pointed at the benchmark's topics, used only while that file does not read
 * ONCEFLOW_WORDS_INPUT/OUTPUT itself (bench/run.ts prefers the topology file when it does).
 */
import { WORD_COUNT_DEFAULTS, wordCountTopology } from '../../topology/word-count.ts';

export default wordCountTopology({
  input: process.env.ONCEFLOW_WORDS_INPUT ?? WORD_COUNT_DEFAULTS.input,
  output: process.env.ONCEFLOW_WORDS_OUTPUT ?? WORD_COUNT_DEFAULTS.output,
});
