import type { Config } from '../config/index.js';
import { chatCompletionsClientFromConfig } from '../llm/chatCompletions.js';
import type { CallAnalyser } from './analyser.js';
import { DeterministicAnalyser } from './deterministic.js';
import { LlmAnalyser } from './llm.js';

export type { AnalysisContext, AnalysisInput, CallAnalyser } from './analyser.js';

/**
 * One request of the LLM analyser at most: under the analyseCall activity's 1-minute
 * startToCloseTimeout, so that a model too slow fails the request, not the attempt (an
 * attempt that times out could never fall back).
 */
export const ANALYSIS_REQUEST_TIMEOUT_MS = 45_000;

/** The post-call analyser of this deployment: ANALYSER (deterministic by default, or llm). */
export function createCallAnalyser(config?: Pick<Config, 'ANALYSER' | 'LLM_BASE_URL' | 'LLM_API_KEY' | 'LLM_MODEL' | 'LLM_TIMEOUT_SECONDS'>): CallAnalyser {
  const deterministic = new DeterministicAnalyser();
  if (config?.ANALYSER !== 'llm') return deterministic;
  const client = chatCompletionsClientFromConfig(config, { timeoutMs: Math.min(config.LLM_TIMEOUT_SECONDS * 1000, ANALYSIS_REQUEST_TIMEOUT_MS) });
  // loadConfig refuses ANALYSER=llm without a model; a config built otherwise gets the default.
  return client ? new LlmAnalyser({ client, fallback: deterministic }) : deterministic;
}
