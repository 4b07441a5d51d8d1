/**
 * The SIP user agent server of one WebSocket (RFC 7118): browsers dial in, the edge never
 * dials out. It answers INVITEs carrying an SDP offer and the web-call credentials, keeps
 * their dialogs (ACK, BYE either way, CANCEL, re-INVITE, OPTIONS) and hands each established
 * call to the owner. Admission and media are injected, so this file is about SIP only.
 *
 * Over a reliable transport most of RFC 3261's transaction machinery reduces to: answer each
 * request once (and repeat the last answer to a retransmission), retransmit our 2xx to an
 * INVITE until its ACK arrives, and match CANCELs and responses by Via branch.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from '../../logging/logger.js';
import type { AdmittedCall, CallAdmission } from '../admission.js';
import { isRejection } from '../admission.js';
import type { ChannelCloseReason, MediaChannel } from '../media/channel.js';
import { DigestAuthenticator, type DigestCredentials } from './digest.js';
import {
  createResponse,
  getHeader,
  getHeaderValues,
  parseCSeq,
  parseNameAddr,
  parseSipMessage,
  reasonPhrase,
  serializeSipMessage,
  SipParseError,
  tagOf,
  topViaBranch,
  type SipHeader,
  type SipMessageLimits,
  type SipRequest,
  type SipResponse,
} from './message.js';

/** What the SIP layer needs of a call's media (a WebRtcCall, or a fake in tests). */
export interface MediaSession {
  readonly answerSdp: string;
  readonly channel: MediaChannel;
  /** Resolves when audio can flow; rejects if it never will. */
  readonly connected: Promise<void>;
  readonly codec: string;
  close(reason: ChannelCloseReason): Promise<void>;
}

export interface MediaAnswerer {
  /** Whether the offer has usable audio; a string says why not (answered 488). */
  check(offerSdp: string): { transportKey: string; codec: string } | { reject: string };
  /** Answers a checked offer. */
  answer(offerSdp: string, logger: Logger): Promise<MediaSession>;
}

/** A call whose INVITE was admitted, answered and acknowledged, with its media up. */
export interface EstablishedCall {
  /** The web call's id in the service. */
  callId: string;
  credential: AdmittedCall['credential'];
  /** The call's trace, as the service answered its admission (absent with tracing off). */
  traceparent?: string;
  /** The SIP dialog's Call-ID. */
  sipCallId: string;
  /** 20 ms frames of 16 kHz PCM both ways. */
  channel: MediaChannel;
  /** The negotiated codec on the wire (opus or PCMU). */
  codec: string;
  /** The INVITE's X- headers, names lower-cased (x-session-id, x-script-id, x-contact-id, x-did, x-participant-identity, …). */
  inviteHeaders: Record<string, string>;
  invite: SipRequest;
  /** Ends the call from the edge: BYE to the browser, channel closed with `local_hangup`. Resolves when the browser answered the BYE (or after 4 s). */
  hangUp(): Promise<void>;
}

export interface SipTransport {
  send(text: string): void;
  /** Closes the WebSocket with a close code (1002 protocol error, 1008 policy). */
  close(code: number, reason: string): void;
}

export interface UserAgentServerOptions {
  transport: SipTransport;
  admission: CallAdmission;
  media: MediaAnswerer;
  logger: Logger;
  onCall: (call: EstablishedCall) => void;
  /** An admitted call's dialog ended; `established` says whether onCall ever saw it. */
  onCallEnded?: (callId: string, reason: ChannelCloseReason, established: boolean) => void;
  /** host[:port] of the edge for Via and Contact, and ws or wss. */
  localHost: string;
  secure: boolean;
  /** Dialogs (calls in any state) one socket may hold (default 4). */
  maxDialogs?: number;
  /** Refused INVITEs (bad or spent tokens) after which the socket is closed with 1008 (default 10): no token guessing on one connection. */
  maxRefusals?: number;
  /** Challenge INVITEs with these credentials first (optional). */
  digest?: DigestCredentials;
  /** RFC 3261 T1 in ms: 2xx retransmissions start at T1, ACK awaited 64×T1 (default 500). */
  t1Ms?: number;
  /** Header and Via caps of one message (default DEFAULT_SIP_MESSAGE_LIMITS): past them a request is answered 513. */
  messageLimits?: SipMessageLimits;
}

const ALLOW = 'INVITE, ACK, CANCEL, BYE, OPTIONS';
const SUPPORTED_EXTENSIONS = new Set(['outbound', 'ice', 'replaces']);
const BYE_TIMEOUT_MS = 4000;

type DialogState = 'proceeding' | 'answered' | 'confirmed' | 'terminated';

interface Dialog {
  sipCallId: string;
  localTag: string;
  remoteTag: string;
  invite: SipRequest;
  inviteBranch: string;
  state: DialogState;
  log: Logger;
  /** The last response sent to the INVITE (repeated to retransmissions). */
  lastResponse?: string;
  admitted?: AdmittedCall;
  media?: MediaSession;
  transportKey?: string;
  remoteTarget: string;
  remoteCSeq: number;
  localCSeq: number;
  retransmitTimer?: NodeJS.Timeout;
  ackTimer?: NodeJS.Timeout;
  /** A re-INVITE of ours in progress (only one at a time: 491 otherwise). */
  reInviteInProgress: boolean;
  established: boolean;
  hangingUp?: Promise<void>;
}

interface PendingClientTransaction {
  resolve: (response: SipResponse | undefined) => void;
  timer: NodeJS.Timeout;
}

/** Whether the dialog ended meanwhile (a CANCEL or a closed socket during an await). */
const ended = (dialog: Dialog): boolean => dialog.state === 'terminated';
const newTag = (): string => randomBytes(8).toString('hex');
const newBranch = (): string => `z9hG4bK${randomBytes(10).toString('hex')}`;

export class SipUserAgentServer {
  private readonly dialogs = new Map<string, Dialog>();
  /** INVITE server transactions by Via branch: retransmissions, CANCEL and the ACK of a non-2xx. */
  private readonly invitesByBranch = new Map<string, Dialog>();
  private readonly clientTransactions = new Map<string, PendingClientTransaction>();
  private readonly digest?: DigestAuthenticator;
  private readonly t1: number;
  private closed = false;
  /** Set once we close the socket: messages still in flight are ignored. */
  private closing = false;
  private refusals = 0;

  constructor(private readonly options: UserAgentServerOptions) {
    this.digest = options.digest ? new DigestAuthenticator(options.digest) : undefined;
    this.t1 = options.t1Ms ?? 500;
  }

  get dialogCount(): number {
    return this.dialogs.size;
  }

  /** One WebSocket message. Never throws: bad input is answered or closes this socket. */
  handleMessage(text: string): void {
    if (this.closed || this.closing) return;
    // A CRLF keep-alive (RFC 5626) is no message.
    if (text.trim() === '') return;
    let message;
    try {
      message = parseSipMessage(text, this.options.messageLimits);
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      if (err instanceof SipParseError && err.request && err.request.method !== 'ACK') {
        this.options.logger.warn({ reason, method: err.request.method, status: err.status }, `${err.status === 513 ? 'oversized' : 'malformed'} SIP request: ${err.status}`);
        this.respond(err.request, err.status, { reason: `${reasonPhrase(err.status)} (${reason})`.slice(0, 120) });
        return;
      }
      this.options.logger.warn({ reason, sample: text.slice(0, 60) }, 'unparseable SIP message: closing the WebSocket');
      this.closing = true;
      this.options.transport.close(1002, 'malformed SIP message');
      return;
    }
    try {
      if (message.kind === 'response') this.handleResponse(message);
      else this.handleRequest(message);
    } catch (err) {
      this.options.logger.error({ err }, 'SIP message handling failed');
      if (message.kind === 'request' && message.method !== 'ACK') this.respond(message, 500);
    }
  }

  /** The WebSocket closed: every call on it has lost its signalling and so its media. */
  handleTransportClosed(): void {
    if (this.closed) return;
    this.closed = true;
    for (const tx of this.clientTransactions.values()) {
      clearTimeout(tx.timer);
      tx.resolve(undefined);
    }
    this.clientTransactions.clear();
    for (const dialog of [...this.dialogs.values()]) this.terminate(dialog, 'media_lost');
  }

  // ------------------------------------------------------------------ requests

  private handleRequest(request: SipRequest): void {
    const method = request.method.toUpperCase();
    if (method === 'ACK') return this.handleAck(request);
    if (method === 'CANCEL') return this.handleCancel(request);
    const toTag = tagOf(getHeader(request, 'To'));
    if (toTag) return this.handleInDialog(request, method, toTag);
    switch (method) {
      case 'INVITE':
        return this.handleInvite(request);
      case 'OPTIONS':
        return this.respondOptions(request);
      case 'BYE':
        this.respond(request, 481);
        return;
      default:
        this.options.logger.info({ method }, 'unsupported SIP method: 405');
        this.respond(request, 405, { headers: [{ name: 'Allow', value: ALLOW }] });
    }
  }

  private handleInvite(invite: SipRequest): void {
    const branch = topViaBranch(invite);
    if (!branch) {
      this.respond(invite, 400, { reason: 'Bad Request (no Via branch)' });
      return;
    }
    const existing = this.invitesByBranch.get(branch);
    if (existing) {
      // A retransmission: repeat what we last said.
      if (existing.lastResponse) this.options.transport.send(existing.lastResponse);
      return;
    }
    const sipCallId = getHeader(invite, 'Call-ID')!;
    const remoteTag = tagOf(getHeader(invite, 'From'));
    const log = this.options.logger.child({ sipCallId });
    if (!remoteTag) {
      log.warn('INVITE without From tag: 400');
      this.respond(invite, 400, { reason: 'Bad Request (no From tag)' });
      return;
    }
    const contact = getHeaderValues(invite, 'Contact')[0];
    const remoteTarget = contact ? parseNameAddr(contact)?.uri : undefined;
    if (!remoteTarget) {
      log.warn('INVITE without a usable Contact: 400');
      this.respond(invite, 400, { reason: 'Bad Request (no Contact)' });
      return;
    }
    // Each named once: the answer never outgrows the request.
    const unsupported = [...new Set(getHeaderValues(invite, 'Require').filter((ext) => !SUPPORTED_EXTENSIONS.has(ext.toLowerCase())))];
    if (unsupported.length > 0) {
      log.info({ unsupported }, 'INVITE requires unsupported extensions: 420');
      this.respond(invite, 420, { headers: [{ name: 'Unsupported', value: unsupported.join(', ') }] });
      return;
    }
    if (this.dialogs.size >= (this.options.maxDialogs ?? 4)) {
      log.warn({ dialogs: this.dialogs.size }, 'too many calls on one WebSocket: 486');
      this.respond(invite, 486, { reason: 'Busy Here (too many calls on this connection)' });
      return;
    }
    const dialog: Dialog = {
      sipCallId,
      localTag: newTag(),
      remoteTag,
      invite,
      inviteBranch: branch,
      state: 'proceeding',
      log,
      remoteTarget,
      remoteCSeq: parseCSeq(getHeader(invite, 'CSeq')!)!.seq,
      localCSeq: 1,
      reInviteInProgress: false,
      established: false,
    };
    this.dialogs.set(this.dialogKey(sipCallId, dialog.localTag), dialog);
    this.invitesByBranch.set(branch, dialog);
    this.respondInvite(dialog, 100);
    this.admitAndAnswer(dialog).catch((err: unknown) => {
      dialog.log.error({ err }, 'INVITE handling failed');
      this.failInvite(dialog, 500);
    });
  }

  private async admitAndAnswer(dialog: Dialog): Promise<void> {
    const { invite, log } = dialog;
    if (this.digest && !this.digest.verify(getHeader(invite, 'Authorization'), 'INVITE')) {
      log.info('INVITE challenged: 401');
      this.failInvite(dialog, 401, { headers: [{ name: 'WWW-Authenticate', value: this.digest.challenge() }] });
      return;
    }
    // The offer is checked before admission, so an unusable one does not burn the single-use token.
    const contentType = getHeader(invite, 'Content-Type')?.split(';')[0].trim().toLowerCase();
    const offer = contentType === 'application/sdp' ? invite.body : '';
    const check = this.options.media.check(offer);
    if ('reject' in check) {
      log.info({ reason: check.reject }, 'INVITE without usable audio: 488');
      this.failInvite(dialog, 488, { reason: `Not Acceptable Here (${check.reject})`.slice(0, 120) });
      return;
    }
    dialog.transportKey = check.transportKey;

    const admission = await this.options.admission.admit(invite);
    if (isRejection(admission)) {
      log.info({ status: admission.reject, reason: admission.reason }, 'INVITE refused');
      const retryAfter = admission.retryAfterSeconds !== undefined ? [{ name: 'Retry-After', value: String(admission.retryAfterSeconds) }] : [];
      this.failInvite(dialog, admission.reject, { reason: admission.reason, headers: retryAfter });
      if (admission.reject !== 503 && ++this.refusals >= (this.options.maxRefusals ?? 10) && !this.closing) {
        log.warn({ refusals: this.refusals }, 'too many refused INVITEs: closing the WebSocket');
        this.closing = true;
        this.options.transport.close(1008, 'too many refused calls');
      }
      return;
    }
    if (ended(dialog)) {
      // Cancelled while the token was being redeemed: the call exists and will end unanswered.
      log.warn({ callId: admission.callId }, 'call admitted after the INVITE was cancelled');
      this.options.onCallEnded?.(admission.callId, 'remote_hangup', false);
      return;
    }
    dialog.admitted = admission;
    dialog.log = log.child({ callId: admission.callId });

    let media: MediaSession;
    try {
      media = await this.options.media.answer(offer, dialog.log);
    } catch (err) {
      dialog.log.warn({ err }, 'could not answer the SDP offer: 488');
      this.failInvite(dialog, 488, { reason: 'Not Acceptable Here (offer not usable)' });
      return;
    }
    if (ended(dialog)) {
      // Cancelled while the answer was being made.
      await media.close('remote_hangup');
      return;
    }
    dialog.media = media;
    void media.channel.closed.then((reason) => this.onMediaClosed(dialog, reason));

    dialog.state = 'answered';
    this.respondInvite(dialog, 200, {
      headers: [...this.contactHeaders(), { name: 'Content-Type', value: 'application/sdp' }],
      body: media.answerSdp,
    });
    dialog.log.info({ codec: media.codec, credential: admission.credential }, 'INVITE answered: 200');
    this.retransmitOk(dialog, this.t1);
    dialog.ackTimer = setTimeout(() => {
      dialog.log.warn('no ACK for the 200 OK: hanging up');
      void this.hangUp(dialog, 'media_lost');
    }, 64 * this.t1);
    media.connected.then(
      () => this.maybeEstablished(dialog),
      () => undefined, // the channel closes with media_lost and onMediaClosed hangs up
    );
  }

  private retransmitOk(dialog: Dialog, interval: number): void {
    dialog.retransmitTimer = setTimeout(() => {
      if (dialog.state !== 'answered' || !dialog.lastResponse) return;
      this.options.transport.send(dialog.lastResponse);
      this.retransmitOk(dialog, Math.min(interval * 2, 8 * this.t1));
    }, interval);
  }

  private maybeEstablished(dialog: Dialog): void {
    if (dialog.established || dialog.state !== 'confirmed' || !dialog.media || !dialog.admitted) return;
    dialog.established = true;
    const inviteHeaders: Record<string, string> = {};
    for (const { name, value } of dialog.invite.headers) {
      const lower = name.toLowerCase();
      if (lower.startsWith('x-') && !(lower in inviteHeaders)) inviteHeaders[lower] = value;
    }
    dialog.log.info('call established');
    try {
      this.options.onCall({
        callId: dialog.admitted.callId,
        credential: dialog.admitted.credential,
        ...(dialog.admitted.traceparent ? { traceparent: dialog.admitted.traceparent } : {}),
        sipCallId: dialog.sipCallId,
        channel: dialog.media.channel,
        codec: dialog.media.codec,
        inviteHeaders,
        invite: dialog.invite,
        hangUp: () => this.hangUp(dialog, 'local_hangup'),
      });
    } catch (err) {
      dialog.log.error({ err }, 'onCall threw: hanging up');
      void this.hangUp(dialog, 'local_hangup');
    }
  }

  private handleAck(ack: SipRequest): void {
    const toTag = tagOf(getHeader(ack, 'To'));
    const dialog = toTag ? this.dialogs.get(this.dialogKey(getHeader(ack, 'Call-ID')!, toTag)) : undefined;
    if (!dialog) return; // the ACK of a non-2xx final response, or of a dialog already gone
    if (dialog.state === 'answered') {
      dialog.state = 'confirmed';
      clearTimeout(dialog.retransmitTimer);
      clearTimeout(dialog.ackTimer);
      dialog.log.debug('ACK received');
      this.maybeEstablished(dialog);
    }
  }

  private handleCancel(cancel: SipRequest): void {
    const branch = topViaBranch(cancel);
    const dialog = branch ? this.invitesByBranch.get(branch) : undefined;
    if (!dialog) {
      this.respond(cancel, 481);
      return;
    }
    this.respond(cancel, 200, { toTag: dialog.localTag });
    if (dialog.state !== 'proceeding') return; // already answered: the CANCEL changes nothing
    dialog.log.info('INVITE cancelled: 487');
    this.failInvite(dialog, 487);
  }

  private handleInDialog(request: SipRequest, method: string, toTag: string): void {
    const dialog = this.dialogs.get(this.dialogKey(getHeader(request, 'Call-ID')!, toTag));
    if (!dialog || dialog.state === 'terminated' || dialog.state === 'proceeding') {
      if (method === 'OPTIONS') return this.respondOptions(request);
      this.respond(request, 481);
      return;
    }
    const cseq = parseCSeq(getHeader(request, 'CSeq')!)!.seq;
    if (cseq <= dialog.remoteCSeq) {
      this.respond(request, 500, { reason: 'Server Internal Error (CSeq out of order)' });
      return;
    }
    dialog.remoteCSeq = cseq;
    switch (method) {
      case 'BYE':
        this.respond(request, 200);
        dialog.log.info('BYE from the browser');
        this.terminate(dialog, 'remote_hangup');
        return;
      case 'INVITE':
        return this.handleReInvite(dialog, request);
      case 'OPTIONS':
        return this.respondOptions(request);
      default:
        this.respond(request, 405, { headers: [{ name: 'Allow', value: ALLOW }] });
    }
  }

  /** A re-INVITE: the same session again (hold refresh, a browser's renegotiation of nothing) is answered with the current SDP; anything else 488. */
  private handleReInvite(dialog: Dialog, request: SipRequest): void {
    if (dialog.state === 'answered' || dialog.reInviteInProgress) {
      this.respond(request, 491);
      return;
    }
    const media = dialog.media!;
    if (request.body.trim()) {
      const check = this.options.media.check(request.body);
      if ('reject' in check || check.transportKey !== dialog.transportKey || check.codec !== media.codec) {
        dialog.log.info({ reason: 'reject' in check ? check.reject : 'new transport or codec' }, 're-INVITE changes the session: 488');
        this.respond(request, 488, { reason: 'Not Acceptable Here (renegotiation not supported)' });
        return;
      }
    }
    this.respond(request, 200, {
      headers: [...this.contactHeaders(), { name: 'Content-Type', value: 'application/sdp' }],
      body: media.answerSdp,
    });
  }

  private respondOptions(request: SipRequest): void {
    this.respond(request, 200, {
      toTag: newTag(),
      headers: [
        { name: 'Allow', value: ALLOW },
        { name: 'Accept', value: 'application/sdp' },
        { name: 'Supported', value: 'outbound' },
      ],
    });
  }

  // ------------------------------------------------------------------ ending calls

  private onMediaClosed(dialog: Dialog, reason: ChannelCloseReason): void {
    if (dialog.state === 'terminated') return;
    // The media died under a live dialog (ICE failure, DTLS failure, no connection in time).
    dialog.log.warn({ reason }, 'media closed: hanging up');
    void this.hangUp(dialog, reason);
  }

  /** Sends BYE (or a final error to an unanswered INVITE) and ends the dialog. */
  private hangUp(dialog: Dialog, reason: ChannelCloseReason): Promise<void> {
    if (dialog.hangingUp) return dialog.hangingUp;
    if (dialog.state === 'terminated') return Promise.resolve();
    if (dialog.state === 'proceeding') {
      this.failInvite(dialog, 500);
      return Promise.resolve();
    }
    const bye = this.inDialogRequest(dialog, 'BYE');
    this.terminate(dialog, reason);
    dialog.log.info({ reason }, 'BYE to the browser');
    dialog.hangingUp = this.sendRequest(bye).then((response) => {
      if (!response) dialog.log.debug('BYE not answered');
    });
    return dialog.hangingUp;
  }

  private terminate(dialog: Dialog, reason: ChannelCloseReason): void {
    if (dialog.state === 'terminated') return;
    dialog.state = 'terminated';
    clearTimeout(dialog.retransmitTimer);
    clearTimeout(dialog.ackTimer);
    this.dialogs.delete(this.dialogKey(dialog.sipCallId, dialog.localTag));
    this.invitesByBranch.delete(dialog.inviteBranch);
    if (dialog.media) {
      dialog.media.close(reason).catch((err: unknown) => dialog.log.warn({ err }, 'media close failed'));
    }
    if (dialog.admitted) {
      dialog.log.info({ reason }, 'call ended');
      try {
        this.options.onCallEnded?.(dialog.admitted.callId, reason, dialog.established);
      } catch (err) {
        dialog.log.error({ err }, 'onCallEnded threw');
      }
    }
  }

  /** A final error response to the INVITE, and the dialog is gone. */
  private failInvite(dialog: Dialog, status: number, options: { reason?: string; headers?: SipHeader[] } = {}): void {
    if (dialog.state !== 'proceeding') return;
    this.respondInvite(dialog, status, options);
    this.terminate(dialog, 'remote_hangup');
  }

  // ------------------------------------------------------------------ sending

  private respondInvite(dialog: Dialog, status: number, options: { reason?: string; headers?: SipHeader[]; body?: string } = {}): void {
    const response = createResponse(dialog.invite, status, { ...options, toTag: dialog.localTag });
    dialog.lastResponse = serializeSipMessage(response);
    this.options.transport.send(dialog.lastResponse);
  }

  private respond(request: SipRequest, status: number, options: { reason?: string; headers?: SipHeader[]; body?: string; toTag?: string } = {}): void {
    const response = createResponse(request, status, { toTag: newTag(), ...options });
    this.options.transport.send(serializeSipMessage(response));
  }

  private contactHeaders(): SipHeader[] {
    return [
      { name: 'Contact', value: `<sip:edge@${this.options.localHost};transport=${this.options.secure ? 'wss' : 'ws'}>` },
      { name: 'Allow', value: ALLOW },
      { name: 'Supported', value: 'outbound' },
    ];
  }

  private inDialogRequest(dialog: Dialog, method: string): SipRequest {
    const ourTo = `${getHeader(dialog.invite, 'To')};tag=${dialog.localTag}`;
    return {
      kind: 'request',
      method,
      uri: dialog.remoteTarget,
      headers: [
        { name: 'Via', value: `SIP/2.0/${this.options.secure ? 'WSS' : 'WS'} ${this.options.localHost};branch=${newBranch()}` },
        { name: 'Max-Forwards', value: '70' },
        { name: 'From', value: ourTo },
        { name: 'To', value: getHeader(dialog.invite, 'From')! },
        { name: 'Call-ID', value: dialog.sipCallId },
        { name: 'CSeq', value: `${dialog.localCSeq++} ${method}` },
      ],
      body: '',
    };
  }

  /** Sends a request of ours; resolves with its final response, or undefined on timeout or a closed socket. */
  private sendRequest(request: SipRequest): Promise<SipResponse | undefined> {
    if (this.closed) return Promise.resolve(undefined);
    const branch = topViaBranch(request)!;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.clientTransactions.delete(branch);
        resolve(undefined);
      }, BYE_TIMEOUT_MS);
      this.clientTransactions.set(branch, { resolve, timer });
      this.options.transport.send(serializeSipMessage(request));
    });
  }

  private handleResponse(response: SipResponse): void {
    if (response.status < 200) return;
    const branch = topViaBranch(response);
    const tx = branch ? this.clientTransactions.get(branch) : undefined;
    if (!tx) return; // a stray or duplicate response
    this.clientTransactions.delete(branch!);
    clearTimeout(tx.timer);
    tx.resolve(response);
  }

  private dialogKey(sipCallId: string, localTag: string): string {
    return `${sipCallId}\n${localTag}`;
  }
}
