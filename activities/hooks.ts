// Activities of a webhook hook run (workflows/hookRunWorkflow.ts). Each is idempotent:
// a retry after a lost result finds its work done instead of doing it twice.
import type { MappedContact } from '../src/domain/hookAutomation.js';
import { addHookContactToList, scheduleHookCall, type HookCallScheduled, type HookContactAdded } from '../src/services/hookAutomations.js';
import type { ActivityDeps } from './index.js';
import { hookRuns } from '../src/metrics/callMetrics.js';

export function createHookActivities(deps: ActivityDeps) {
  return {
    /** schedule_call: the create-phone-call path, with the call id derived from the run id. */
    async scheduleHookCall(input: { runId: string; teamId: string; scriptId: string; fromNumber: string; contact: MappedContact }): Promise<HookCallScheduled> {
      const scheduled = await scheduleHookCall(deps, input);
      hookRuns.inc({ outcome: 'call_scheduled' });
      return scheduled;
    },
    /** add_to_list: upsert the contact and add it to the hook's list. */
    async addHookContactToList(input: { runId: string; teamId: string; listId: string; contact: MappedContact }): Promise<HookContactAdded> {
      const added = await addHookContactToList(deps, input);
      hookRuns.inc({ outcome: 'contact_added' });
      return added;
    },
  };
}
