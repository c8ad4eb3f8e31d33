// The size check lives in src/core because state/ (changelog records) runs it too. This path stays
// so that existing imports (worker.ts among them) keep working; new code imports src/core.
export * from '../core/record-size.ts';
