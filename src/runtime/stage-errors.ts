// The stage errors live in src/core because the size check there throws one. This path stays so
// that existing imports keep working; new code imports src/core.
export * from '../core/stage-errors.ts';
