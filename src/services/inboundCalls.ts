/**
 * Calls to a team's number (docs/telephony.md, "Inbound calls"). When an INVITE arrives from
 * the trunk the media edge asks here, before it answers: the number decides the team and the
 * script, the team's ceiling decides whether the call may start now (an inbound caller never
 * waits in line), and the call then runs like a web call: in progress from the start, holding
 * its slot, its workflow waiting for the edge's `answered` event.
 *
 * Each refusal records nothing and carries a stable code (UseCaseError.code) the API turns
 * into the SIP answer the edge gives: unknown_number (404), no_inbound_script (480),
 * at_ceiling (486), caller_number_invalid (433).
 */
import { withTransaction } from '../db/pool.js';
import { addCallSlot, lockTeamSlots } from '../db/repositories/concurrencySlots.js';
import { findCallById, insertCall, markCallInProgress, markWorkflowStarted, setProviderCall, type CallRecord } from '../db/repositories/calls.js';
import { findContactByPhone, insertContact } from '../db/repositories/contacts.js';
import { findPhoneNumberRecords } from '../db/repositories/phoneNumbers.js';
import { nameBasedUuid } from '../domain/ids.js';
import { normalizePhoneNumber } from '../domain/phone.js';
import { startCallWorkflow, type CallServiceDeps } from './calls.js';
import { UseCaseError } from './errors.js';
import { callEvent, dispatchWebhookDeliveries, recordWebhookEvents } from './webhookEvents.js';
import { callsCreated } from '../metrics/callMetrics.js';

export const INBOUND_REFUSALS = ['unknown_number', 'no_inbound_script', 'at_ceiling', 'caller_number_invalid'] as const;
export type InboundRefusal = (typeof INBOUND_REFUSALS)[number];

/** The provider of an inbound call's row: its provider_call_id is the INVITE's Call-ID. */
export const SIP_PROVIDER = 'sip';

export interface InboundInvite {
  /** The number called (the INVITE's request or To user part), any accepted format. */
  toNumber: string;
  /** The caller's number (From / P-Asserted-Identity user part). */
  fromNumber: string;
  /** The INVITE's Call-ID: one call per Call-ID, ever. */
  sipCallId: string;
}

export interface InboundCall {
  callId: string;
  teamId: string;
  scriptId: string;
  contactId: string;
  status: string;
  /** False when the Call-ID had its call already (a retransmitted INVITE, a retried request). */
  created: boolean;
}

const refusal = (kind: UseCaseError['kind'], code: InboundRefusal, message: string, extra: Record<string, unknown> = {}) =>
  new UseCaseError(kind, message, extra, code);

/** The call id of an INVITE's Call-ID: the same Call-ID, the same call, on any instance. */
export function inboundCallId(sipCallId: string): string {
  return nameBasedUuid(`inbound-call:${sipCallId}`);
}

/**
 * Creates the inbound call for an INVITE, or answers the one its Call-ID made already: the
 * team's number with an inbound script (unknown_number / no_inbound_script otherwise), a slot
 * under the team's ceiling taken now (at_ceiling otherwise), the caller's contact found by
 * number in the team or created with just that number, the call row (type inbound,
 * in-progress, from the caller to the team's number) with call.started, then its workflow.
 */
export async function acceptInboundCall(deps: CallServiceDeps, invite: InboundInvite): Promise<InboundCall> {
  const region = deps.config.DEFAULT_PHONE_REGION;
  const toNumber = normalizePhoneNumber(invite.toNumber, region);
  if (!toNumber) throw refusal('not_found', 'unknown_number', `No team has the number ${invite.toNumber}`);
  const fromNumber = normalizePhoneNumber(invite.fromNumber, region);
  if (!fromNumber) throw refusal('invalid', 'caller_number_invalid', `Invalid request: from_number is not a phone number: ${invite.fromNumber}`);
  // Ordered with the record that takes calls first; at most one does (phone_numbers_inbound_idx).
  const [number] = await findPhoneNumberRecords(deps.pool, toNumber);
  if (!number) throw refusal('not_found', 'unknown_number', `No team has the number ${toNumber}`);
  if (!number.inbound_script_id) throw refusal('conflict', 'no_inbound_script', `The number ${toNumber} takes no incoming calls (it has no inbound script)`);
  const teamId = number.team_id;
  const scriptId = number.inbound_script_id;
  const callId = inboundCallId(invite.sipCallId);

  const { call, created, deliveries } = await withTransaction(deps.pool, async (tx) => {
    // The team's lock first: concurrent INVITEs of one Call-ID, and the ceiling, are decided one at a time.
    const slots = await lockTeamSlots(tx, teamId);
    const existing = await findCallById(tx, callId);
    if (existing) return { call: existing, created: false, deliveries: [] };
    if (slots.used >= slots.maxSlots) {
      throw refusal('too_many', 'at_ceiling', `The team is at its ceiling of ${slots.maxSlots} concurrent calls`, { max_concurrent: slots.maxSlots });
    }
    const contact = (await insertContact(tx, teamId, { phone_number: fromNumber })) ?? (await findContactByPhone(tx, teamId, fromNumber));
    if (!contact) throw new Error(`contact ${fromNumber} neither inserted nor found`);
    const now = new Date();
    await insertCall(tx, { id: callId, teamId, contactId: contact.id, scriptId, type: 'inbound', fromNumber, toNumber, scheduledTime: now, progress: 'ringing' });
    await setProviderCall(tx, callId, SIP_PROVIDER, invite.sipCallId);
    const started = (await markCallInProgress(tx, callId, now, 'ringing')) as CallRecord;
    await addCallSlot(tx, teamId, callId);
    return { call: started, created: true, deliveries: await recordWebhookEvents(tx, [callEvent('call.started', started)]) };
  });
  if (call.type !== 'inbound' || call.provider_call_id !== invite.sipCallId || call.to_number !== toNumber) {
    // Only a Call-ID reused for another call gets here.
    throw new UseCaseError('conflict', 'sip_call_id already names another call');
  }
  if (created) callsCreated.inc({ type: 'inbound' });

  if (!call.workflow_started_at) {
    try {
      await startCallWorkflow(deps, call);
      await markWorkflowStarted(deps.pool, [call.id]);
    } catch (err) {
      // The row is the outbox: the reconciler starts the workflow (same id) shortly.
      deps.logger?.warn({ err, callId: call.id }, 'inbound call workflow not started yet; the reconciler will start it');
    }
  }
  dispatchWebhookDeliveries(deps, deliveries);
  return { callId: call.id, teamId: call.team_id, scriptId: call.script_id, contactId: call.contact_id, status: call.status, created };
}
