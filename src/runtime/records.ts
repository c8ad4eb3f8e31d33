// The record types live in src/core, below state/ and kafka/, which use them too. This path stays
// so that existing imports (worker.ts among them) keep working; new code imports src/core.
export type * from '../core/records.ts';
