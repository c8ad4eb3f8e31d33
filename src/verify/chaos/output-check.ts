import { readTopic } from '../../kafka/read-topic.ts';
import { endMarkerVisibleMs, type LiveOutputReader, type LiveOutputReport } from '../live-output.ts';
import { verify, type VerifyReport } from '../verify.ts';
import type { RunNames, Workload } from './workload.ts';

/** What the committed output, and a reader who watched it during the run, say about the run. */
export interface OutputCheck {
  readonly report: VerifyReport;
  /** What the read_committed reader was shown during the run, against the output as committed. */
  readonly shown: LiveOutputReport;
  /** Whether that reader saw no duplicate, nothing out of order, nothing aborted and nothing skipped. */
  readonly liveOk: boolean;
  /** From the commit of a fresh producer's marker on every output partition until a read_committed reader had them all; null: not within 60 s. */
  readonly endMarkerMs: number | null;
}

/** Checks the output of a run that has caught up; stops the live reader. */
export async function checkOutput(bootstrap: string, names: RunNames, workload: Workload, liveReader: LiveOutputReader, log: (line: string) => void): Promise<OutputCheck> {
  const { inputTopic, outputTopic } = names;
  const report = await verify({
    bootstrap,
    inputTopic,
    lineageTopics: [...workload.repartitionTopics, outputTopic],
    resultTopic: outputTopic,
    deadLetterTopic: workload.deadLetterTopic,
    model: workload.model,
    countUncommitted: true,
  });
  const committedOutput = await readTopic(bootstrap, outputTopic, { isolation: 'read_committed', missingTopicGraceMs: 30_000 });
  await liveReader.stop();
  const shown = liveReader.compare(committedOutput);
  const liveOk = shown.duplicates === 0 && shown.outOfOrder === 0 && shown.aborted === 0 && shown.skipped === 0;
  log(`read_committed reader during the run: ${shown.records} records, ${shown.duplicates} duplicates, ${shown.outOfOrder} out of order, ${shown.aborted} aborted, ${shown.skipped} skipped; ${shown.notReached} committed records past where it had read when it stopped`);
  const endMarkerMs = (await endMarkerVisibleMs(bootstrap, outputTopic, { timeoutMs: 60_000 })) ?? null;
  log(endMarkerMs === null ? 'end markers NOT readable read_committed within 60 s: a transaction was left open' : `end markers readable read_committed after ${endMarkerMs} ms`);
  return { report, shown, liveOk, endMarkerMs };
}
