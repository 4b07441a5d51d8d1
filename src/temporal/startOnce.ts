import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowIdConflictPolicy,
  type Client,
  type WorkflowIdReusePolicy,
  type WorkflowStartOptions,
} from '@temporalio/client';

/**
 * Starts a workflow unless its id names one already: a running one is joined (conflict
 * policy USE_EXISTING), and a closed one counts as started when the reuse policy, which
 * every caller chooses on purpose, forbids running the id again.
 */
export async function startWorkflowOnce(
  temporal: Client,
  workflowType: string,
  options: Omit<WorkflowStartOptions, 'workflowIdConflictPolicy' | 'workflowIdReusePolicy'> & { workflowIdReusePolicy: WorkflowIdReusePolicy },
): Promise<void> {
  try {
    await temporal.workflow.start(workflowType, { ...options, workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING });
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return;
    throw err;
  }
}
