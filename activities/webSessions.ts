/**
 * Activities of the web session workflow (workflows/webSessionWorkflow.ts): the worker's
 * side of a web session (src/services/webSessionRedemption.ts), both idempotent.
 */
import { createWebSessionCall, expireWebSession } from '../src/services/webSessionRedemption.js';
import type { WebSessionRedemption } from '../workflows/contracts.js';
import type { ActivityDeps } from './index.js';

export function createWebSessionActivities(deps: ActivityDeps) {
  return {
    /** The redemption: creates the web call, passes the session's slot to it, marks the session used. */
    async createWebSessionCall(input: { sessionId: string; callId: string }): Promise<WebSessionRedemption> {
      return createWebSessionCall(deps, input);
    },

    /** minted → expired: frees the session's slot and wakes the team's waiting phone calls. */
    async expireWebSession(input: { sessionId: string; teamId: string }): Promise<void> {
      return expireWebSession(deps, input);
    },
  };
}

export type WebSessionActivities = ReturnType<typeof createWebSessionActivities>;
