/**
 * VOICE_PROVIDER=sip (docs/telephony.md, "Outbound calls"): the call is dialled through the
 * SIP trunk by a media edge. Placing it here decides nothing on the wire: it names the SIP
 * Call-ID the INVITE will carry and hands the numbers to the workflow, which runs the dial
 * activity on the edges' shared dial queue, with whether to screen the answer for an
 * answering machine and the message to leave on one (docs/telephony.md, "Voicemail detection").
 */
import { parseScriptDefinition } from '../domain/scripts/definition.js';
import { voicemailMessageOf } from '../domain/scripts/voicemail.js';
import { sipCallIdOf } from '../domain/sipOutcomes.js';
import type { PlaceCallRequest, PlacedCall, VoiceProvider } from './provider.js';

export class SipTrunkProvider implements VoiceProvider {
  readonly name = 'sip';

  constructor(private readonly ringTimeoutSeconds: number) {}

  async placeCall(request: PlaceCallRequest): Promise<PlacedCall> {
    // From is the team's number; an outbound call always has one (scheduling requires it).
    if (!request.from) throw new Error(`call ${request.callId} has no caller number for the INVITE's From`);
    // An invalid script fails the call once it runs; its answer is still screened.
    const checked = parseScriptDefinition(request.script.definition);
    const script = checked.ok ? checked.script : undefined;
    const voicemailMessage = script ? voicemailMessageOf(script, { contact: request.contact, objects: request.objects, call: request.call ?? {} }) : undefined;
    return {
      provider: this.name,
      providerCallId: sipCallIdOf(request.callId),
      mode: 'media_edge',
      dial: {
        from: request.from,
        to: request.to,
        ringTimeoutMs: this.ringTimeoutSeconds * 1000,
        screen: script?.voicemail_detection !== false,
        ...(voicemailMessage ? { voicemailMessage } : {}),
      },
    };
  }
}
