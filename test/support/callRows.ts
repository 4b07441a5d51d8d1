// Phone calls written straight to the test database (no workflow), for tests of the slot
// line and the admission, which read and write only rows.
import { randomUUID } from 'node:crypto';
import type { Pool } from '../../src/db/pool.js';
import { insertCall } from '../../src/db/repositories/calls.js';
import { upsertContactByPhone } from '../../src/db/repositories/contacts.js';
import { insertScript } from '../../src/db/repositories/scripts.js';
import { insertTeam } from '../../src/db/repositories/teams.js';
import { DEMO_SCRIPT } from '../../src/domain/scripts/demoScript.js';

export interface CallRowTeam {
  id: string;
  scriptId: string;
}

/** A team of ceiling `maxConcurrent` with the demo script. */
export async function insertCallRowTeam(pool: Pool, maxConcurrent: number): Promise<CallRowTeam> {
  const team = await insertTeam(pool, { name: 'call rows', maxConcurrent });
  const script = await insertScript(pool, { teamId: team.id, name: DEMO_SCRIPT.name, definition: DEMO_SCRIPT });
  return { id: team.id, scriptId: script.id };
}

let numberSeq = 0;

/**
 * `n` phone calls of the team, each to a contact of its own, from `from`, scheduled at `at`
 * (default: a minute ago), in creation order; their ids. `wakesOnGrant`: their workflows
 * would sleep in the admission line until granted.
 */
export async function insertPhoneCalls(pool: Pool, team: CallRowTeam, n: number, opts: { at?: Date; from?: string; wakesOnGrant?: boolean } = {}): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    numberSeq += 1;
    const phone = `+1415${String(200 + (process.pid % 700)).padStart(3, '0')}${String(1000 + numberSeq).padStart(4, '0')}`;
    const { contact } = await upsertContactByPhone(pool, team.id, { phone_number: phone, first_name: 'Slot' });
    const { call } = await insertCall(pool, {
      id: randomUUID(),
      teamId: team.id,
      contactId: contact.id,
      scriptId: team.scriptId,
      type: 'outbound',
      fromNumber: opts.from ?? '+12125550100',
      toNumber: phone,
      scheduledTime: opts.at ?? new Date(Date.now() - 60_000),
      progress: 'waiting_for_scheduled_time',
      wakesOnGrant: opts.wakesOnGrant,
    });
    ids.push(call.id);
  }
  return ids;
}
