// A typed stand-in for a media edge in workflow tests (test/workflows/*): a worker on an edge task queue of its own
// that speaks instantly and records what it said and the hang-ups; each file gives the caller
// (askCaller) and the activities of its own (converseTurn, transferCaller).
import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { getOrCreateSharedWebContact } from '../../src/db/repositories/contacts.js';
import { scheduleCall, type CallServiceDeps } from '../../src/services/calls.js';
import type { ConverseVoice } from '../../src/mediaEdge/conversation/converseTurn.js';
import { callEventSignal, callWorkflowId, mediaEdgeTaskQueue, type MediaEdgeActivities } from '../../workflows/contracts.js';

/** What every stand-in edge records. */
export interface StandInRecord {
  /** The texts of speakToCaller, in order. */
  spoken: string[];
  hangUps: number;
}

export type StandInEdge<State extends object> = State &
  StandInRecord & {
    readonly taskQueue: string;
    stop(): Promise<void>;
  };

/**
 * Starts a stand-in edge on the queue `<name>-<uuid>` (mediaEdgeTaskQueue) whose record is
 * `state` plus `spoken` and `hangUps`. `activities` replaces or adds to the defaults: speak
 * at once (60 ms a character), the caller silent, a hang-up counted.
 */
export async function startStandInEdge<State extends object>(
  env: TestWorkflowEnvironment,
  state: State,
  activities: (edge: State & StandInRecord) => Partial<MediaEdgeActivities> & object = () => ({}),
  name = 'test',
): Promise<StandInEdge<State>> {
  const taskQueue = mediaEdgeTaskQueue(`${name}-${randomUUID()}`);
  const edge = Object.assign(state, { spoken: [] as string[], hangUps: 0 });
  const defaults: MediaEdgeActivities = {
    async speakToCaller({ text }) {
      edge.spoken.push(text);
      return { playedMs: text.length * 60, interrupted: false };
    },
    async askCaller() {
      return { kind: 'silence' };
    },
    async hangUpCaller() {
      edge.hangUps++;
    },
  };
  const worker = await Worker.create({ connection: env.nativeConnection, taskQueue, activities: { ...defaults, ...activities(edge) } });
  const running = worker.run();
  return Object.assign(edge, {
    taskQueue,
    async stop() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
    },
  });
}

/** The edge's `answered` event for the call: the call's media is on the edge of this queue. */
export async function answerOnEdge(env: TestWorkflowEnvironment, callId: string, edge: { taskQueue: string }): Promise<void> {
  await env.client.workflow.getHandle(callWorkflowId(callId)).signal(callEventSignal, { type: 'answered', event_id: `answered-${callId}`, media_task_queue: edge.taskQueue });
}

/** A browser-only web call (the team's shared web contact, named `firstName` when given) of the script, scheduled and not yet answered; its id. */
export async function scheduleWebCall(deps: CallServiceDeps, teamId: string, scriptId: string, firstName?: string): Promise<string> {
  const contact = await getOrCreateSharedWebContact(deps.pool, teamId);
  if (firstName !== undefined) await deps.pool.query('UPDATE contacts SET first_name = $2 WHERE id = $1', [contact.id, firstName]);
  return (await scheduleCall(deps, { teamId, scriptId, contact: { id: contact.id }, type: 'web' })).callId;
}

/**
 * A converse turn's voice for a stand-in edge (runConverseTurn): every sentence played at once
 * (each turn's words pushed to `spoken`, when given), and a caller who answers `callerLines` in
 * order, then stays silent. One per call: the lines go on from turn to turn.
 */
export function scriptedCallerVoice(callerLines: string[], spoken?: string[]): ConverseVoice {
  const lines = [...callerLines];
  return {
    async speakSentences(source) {
      const said: string[] = [];
      for (let s = await source.next(); s !== undefined; s = await source.next()) said.push(s);
      if (spoken && said.length) spoken.push(said.join(' '));
      return { said: said.join(' '), interrupted: false };
    },
    async listen() {
      const text = lines.shift();
      return text === undefined ? { kind: 'silence' } : { kind: 'utterance', text };
    },
  };
}
