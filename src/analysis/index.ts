import type { CallAnalyser } from './analyser.js';
import { DeterministicAnalyser } from './deterministic.js';

export type { AnalysisInput, CallAnalyser } from './analyser.js';

/** The post-call analyser of this deployment (the built-in deterministic one for now). */
export function createCallAnalyser(): CallAnalyser {
  return new DeterministicAnalyser();
}
