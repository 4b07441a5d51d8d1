/**
 * A team's phone numbers and the script each runs for the calls it receives (docs/telephony.md,
 * "Inbound calls"). The operator CLI's `numbers add` and `numbers set-inbound` use them.
 */
import { withTransaction, type Pool, type Queryable } from '../db/pool.js';
import { addPhoneNumber, setInboundScript, type PhoneNumberRecord } from '../db/repositories/phoneNumbers.js';
import { findTeamScript } from '../db/repositories/scripts.js';
import { isUuid } from '../domain/ids.js';
import { conflict, notFound } from './errors.js';

const PG_UNIQUE_VIOLATION = '23505';

/**
 * Gives the team's number `scriptId` for its incoming calls, or none (null): not found when
 * the team has no such number or script, a conflict when another team's record of the same
 * number takes calls already (an incoming call names only the number).
 */
export async function setNumberInboundScript(db: Queryable, input: { teamId: string; phoneNumber: string; scriptId: string | null }): Promise<PhoneNumberRecord> {
  if (input.scriptId !== null && (!isUuid(input.scriptId) || !(await findTeamScript(db, input.teamId, input.scriptId)))) {
    throw notFound(`script ${input.scriptId} not found in team ${input.teamId}`);
  }
  let number: PhoneNumberRecord | undefined;
  try {
    number = await setInboundScript(db, input.teamId, input.phoneNumber, input.scriptId?.toLowerCase() ?? null);
  } catch (err) {
    if ((err as { code?: string }).code === PG_UNIQUE_VIOLATION) throw conflict(`${input.phoneNumber} already takes incoming calls for another team`);
    throw err;
  }
  if (!number) throw notFound(`number ${input.phoneNumber} not found in team ${input.teamId}`);
  return number;
}

/**
 * Adds a number to the team (adding it again keeps the record), with a script for its incoming
 * calls when `inboundScriptId` is given; all or nothing.
 */
export async function addTeamNumber(pool: Pool, input: { teamId: string; phoneNumber: string; inboundScriptId?: string }): Promise<PhoneNumberRecord> {
  return withTransaction(pool, async (tx) => {
    const number = await addPhoneNumber(tx, input.teamId, input.phoneNumber);
    if (input.inboundScriptId === undefined) return number;
    return setNumberInboundScript(tx, { teamId: input.teamId, phoneNumber: number.phone_number, scriptId: input.inboundScriptId });
  });
}
