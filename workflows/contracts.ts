/**
 * What the API, the CLI and the workflows share: the task queue, workflow-id builders and
 * their inverses, and signal / update / query definitions. Code outside workflows/ imports
 * only this file from here.
 */
export const DEFAULT_TASK_QUEUE = 'voice-agent';
