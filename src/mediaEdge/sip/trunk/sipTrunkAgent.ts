/**
 * The SIP user agent that talks to a trunk (docs/telephony.md, "The SIP layer"): the UAC of
 * outbound calls (INVITE with digest answers to 401/407, CANCEL, the 2xx's ACK, BYE, REFER)
 * and the UAS of inbound ones (a source check first, the G.711 check, then the owner decides
 * through `onIncomingInvite`), and the dialogs of both (BYE, re-INVITE refreshes, OPTIONS,
 * INFO digits, NOTIFY). Transactions and transport are transactions.ts and transport.ts; SDP
 * beyond "is G.711 offered" is the media layer's. Interface agreed in issue 25's preamble.
 */
import { randomBytes } from 'node:crypto';
import { isIP, type BlockList } from 'node:net';
import type { Logger } from '../../../logging/logger.js';
import { digestResponse } from '../digest.js';
import {
  getHeader,
  getHeaderValues,
  parseCSeq,
  parseNameAddr,
  parseParams,
  splitHeaderList,
  tagOf,
  type SipHeader,
  type SipRequest,
  type SipResponse,
} from '../message.js';
import { DEFAULT_SIP_TIMERS, newBranch, requestAlongInvite, TransactionLayer, type ClientOutcome, type ServerTransaction, type SipTimers } from './transactions.js';
import { SipTransport, type SipPeer, type SipTransportOptions, type SipTransportStats } from './transport.js';
import { allowedSourcesOf, DEFAULT_SOURCE_REQUESTS_PER_SECOND, type TrunkSettings } from './trunkSettings.js';

export interface SipDialog {
  /** The SIP Call-ID. */
  callId: string;
  /** Ends the call from our side; resolves when the far end answered the BYE (or gave up on it). */
  bye(): Promise<void>;
  /** A blind transfer (RFC 3515): `target` is E.164 (sent to the trunk's host) or a SIP URI. 202 (or any 2xx) is accepted. */
  refer(target: string): Promise<{ accepted: boolean; status: number }>;
  onEnded(listener: (by: 'remote_bye') => void): () => void;
  /** In-dialog INFO (DTMF relay: `application/dtmf-relay` "Signal=5\r\nDuration=160", or `application/dtmf`). */
  onInfo(listener: (contentType: string, body: string) => void): () => void;
  /**
   * In-dialog NOTIFY (a REFER's progress, RFC 3515 §2.4.5: `message/sipfrag`, e.g. "SIP/2.0 200 OK";
   * `Subscription-State`'s value, e.g. "terminated;reason=noresource"). An addition to the agreed interface.
   */
  onNotify?(listener: (notify: { event: string; subscriptionState: string; body: string }) => void): () => void;
}

export interface OutboundInvite {
  /** SIP Call-ID to use (derived from the call id, so a retried dial is the same call). */
  callId: string;
  fromNumber: string;
  toNumber: string;
  /** Our SDP offer. */
  sdp: string;
  /**
   * A SIP URI to call at its own host instead of `toNumber` at the trunk (a transfer to a PBX
   * extension or a desk phone, docs/scripts.md "Transfer"). An addition to the agreed interface.
   */
  toUri?: string;
  onProgress?: (status: number, reason: string) => void;
  /** Abort = CANCEL. */
  signal?: AbortSignal;
}

export type OutboundInviteResult =
  | { kind: 'answered'; sdp: string; dialog: SipDialog }
  | { kind: 'failed'; status: number; reason: string }
  | { kind: 'cancelled' };

export interface IncomingInvite {
  callId: string;
  fromNumber: string;
  toNumber: string;
  sourceAddress: string;
  sdp: string;
  /**
   * Aborted when the caller cancels (CANCEL) before an answer, or when the decision took too
   * long (the INVITE was answered 503). An addition to the agreed interface.
   */
  signal: AbortSignal;
  /** A final refusal (404, 480, 486, …); nothing once answered or cancelled. */
  reject(status: number, reason: string): void;
  /** 200 with `sdp`; resolves with the dialog once the ACK came, rejects if it never does or the call was cancelled first. */
  answer(sdp: string): Promise<SipDialog>;
}

export interface SipTrunkAgentOptions {
  settings: TrunkSettings;
  logger: Logger;
  /** RFC 3261 timers (tests shorten them). */
  timers?: Partial<SipTimers>;
  /** Caps and timeouts of the transport (defaults in transport.ts). */
  transport?: Partial<Omit<SipTransportOptions, 'host' | 'port' | 'logger' | 'onMessage'>>;
  /** The User-Agent header. */
  userAgent?: string;
  /** How long `onIncomingInvite` may take to answer or reject before the INVITE is answered 503 (default 30 s). */
  inboundDecisionMs?: number;
}

/** What the agent refused or dropped: the transport's counters and the sources refused 403. */
export interface SipTrunkAgentStats extends SipTransportStats {
  refusedSources: number;
}

const ALLOW = 'INVITE, ACK, CANCEL, BYE, OPTIONS, INFO, REFER, NOTIFY, UPDATE';

/** Whether `address` is in `list` (an IPv4-mapped IPv6 address checked as the IPv4 one). */
function checkAddress(list: BlockList, address: string): boolean {
  const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
  return list.check(address.replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/, '$1'), address.startsWith('::ffff:') ? 'ipv4' : family);
}
const newTag = (): string => randomBytes(8).toString('hex');
const hostText = (host: string): string => (host.includes(':') ? `[${host}]` : host);

interface DialogState {
  callId: string;
  localTag: string;
  /** Our From (UAC) or To (UAS) name-addr, with our tag. */
  local: string;
  /** Theirs, with their tag. */
  remote: string;
  remoteTarget: string;
  /** Route headers of in-dialog requests, in the order sent. */
  routeSet: string[];
  peer: SipPeer;
  localCSeq: number;
  remoteCSeq?: number;
  localSdp: string;
  ended: boolean;
  endedListeners: Set<(by: 'remote_bye') => void>;
  infoListeners: Set<(contentType: string, body: string) => void>;
  notifyListeners: Set<(notify: { event: string; subscriptionState: string; body: string }) => void>;
  /** UAC: the ACK of the 2xx, repeated for each of its retransmissions. */
  ack?: SipRequest;
  /** An INVITE of theirs whose 2xx awaits its ACK (the initial one as UAS, or a re-INVITE). */
  awaitingAck?: { tx: ServerTransaction; cseq: number; onAck?: () => void };
  log: Logger;
  handle: SipDialog;
}

export class SipTrunkAgent {
  private readonly transactions: TransactionLayer;
  private readonly dialogs = new Map<string, DialogState>();
  private readonly timers: SipTimers;
  private inviteHandler?: (invite: IncomingInvite) => Promise<void>;
  private refusedSources = 0;
  private closing?: Promise<void>;
  /** What ends each INVITE still waiting for its answer when the agent closes. */
  private readonly pendingInvites = new Set<() => void>();

  private constructor(
    private readonly options: SipTrunkAgentOptions,
    private readonly transport: SipTransport,
    private readonly allowed: BlockList,
  ) {
    this.timers = { ...DEFAULT_SIP_TIMERS, ...options.timers };
    this.transactions = new TransactionLayer(transport, this.timers, options.logger);
    this.transactions.attach({
      onRequest: (request, tx) => this.onRequest(request, tx),
      onStrayResponse: (response) => this.onStrayResponse(response),
    });
  }

  /** Listens on SIP_LISTEN (UDP and TCP) and resolves the allowed sources. */
  static async start(options: SipTrunkAgentOptions): Promise<SipTrunkAgent> {
    const { list, described } = await allowedSourcesOf(options.settings);
    let agent: SipTrunkAgent | undefined;
    const transport = await SipTransport.start({
      // A flood of distinct requests from one source (each holding a transaction for 64×T1) is
      // cut at the source's rate; the trunk's own addresses are exempt.
      maxUdpRequestsPerSourcePerSecond: options.settings.sourceRequestsPerSecond ?? DEFAULT_SOURCE_REQUESTS_PER_SECOND,
      rateLimitExempt: (address) => checkAddress(list, address),
      ...options.transport,
      host: options.settings.listen.host,
      port: options.settings.listen.port,
      logger: options.logger,
      onMessage: (message, from) => agent?.transactions.receive(message, from),
    });
    agent = new SipTrunkAgent(options, transport, list);
    options.logger.info({ listen: `${options.settings.listen.host}:${transport.port}`, trunk: `${options.settings.trunk.host}:${options.settings.trunk.port};transport=${options.settings.trunk.transport}`, allowedSources: described }, 'SIP trunk agent listening');
    return agent;
  }

  /** The port listened on (UDP and TCP). */
  get port(): number {
    return this.transport.port;
  }

  get stats(): SipTrunkAgentStats {
    return { ...this.transport.stats, refusedSources: this.refusedSources };
  }

  /** Open TCP connections (either direction). */
  get tcpConnections(): number {
    return this.transport.tcpConnections;
  }

  /** Dialogs (calls answered either way) now held. */
  get dialogCount(): number {
    return this.dialogs.size;
  }

  /** The owner of inbound calls; without one, INVITEs are answered 503. */
  onIncomingInvite(handler: (invite: IncomingInvite) => Promise<void>): void {
    this.inviteHandler = handler;
  }

  /** Hangs up every dialog (waits for the BYEs up to 2 s) and closes the sockets. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      for (const shutDown of [...this.pendingInvites]) shutDown();
      const byes = Promise.allSettled([...this.dialogs.values()].map((d) => d.handle.bye()));
      await Promise.race([byes, new Promise((resolve) => setTimeout(resolve, 2000).unref())]);
      this.transactions.close();
      await this.transport.close();
    })();
    return this.closing;
  }

  // ------------------------------------------------------------------ UAC

  private get settings(): TrunkSettings {
    return this.options.settings;
  }

  private trunkPeer(): SipPeer {
    return { transport: this.settings.trunk.transport, address: this.settings.trunk.host, port: this.settings.trunk.port };
  }

  private via(transport: SipPeer['transport']): string {
    const { host, port } = this.settings.publicAddress;
    return `SIP/2.0/${transport.toUpperCase()} ${hostText(host)}:${port};branch=${newBranch()};rport`;
  }

  private contact(user: string, transport: SipPeer['transport']): string {
    const { host, port } = this.settings.publicAddress;
    return `<sip:${user ? `${encodeUser(user)}@` : ''}${hostText(host)}:${port}${transport === 'tcp' ? ';transport=tcp' : ''}>`;
  }

  /**
   * An INVITE to the trunk; never rejects. It has no ring timeout of its own: once the call
   * rings, only a final response or the abort of `signal` (CANCEL) ends the wait.
   */
  invite(req: OutboundInvite): Promise<OutboundInviteResult> {
    if (this.closing) return Promise.resolve({ kind: 'failed', status: 0, reason: 'trunk unreachable: the SIP agent is shutting down' });
    if (req.signal?.aborted) return Promise.resolve({ kind: 'cancelled' });
    const trunk = this.settings.trunk;
    const direct = req.toUri ? peerOfUri(req.toUri, trunk.transport) : undefined;
    if (req.toUri && !direct) return Promise.resolve({ kind: 'failed', status: 0, reason: `not a SIP URI: ${req.toUri}` });
    const peer = direct ?? this.trunkPeer();
    const transportParam = trunk.transport === 'tcp' ? ';transport=tcp' : '';
    const requestUri = req.toUri ?? `sip:${encodeUser(req.toNumber)}@${hostText(trunk.host)}${trunk.port === 5060 ? '' : `:${trunk.port}`}${transportParam}`;
    const localTag = newTag();
    const from = `<sip:${encodeUser(req.fromNumber)}@${hostText(this.settings.publicAddress.host)}>;tag=${localTag}`;
    const to = req.toUri ? `<${req.toUri}>` : `<sip:${encodeUser(req.toNumber)}@${hostText(trunk.host)}>`;
    const log = this.options.logger.child({ sipCallId: req.callId });
    let cseq = 1;

    return new Promise<OutboundInviteResult>((resolve) => {
      let current: SipRequest | undefined;
      let provisional = false;
      let cancelRequested = false;
      let cancelSent = false;
      let settled = false;
      let cancelGuard: NodeJS.Timeout | undefined;
      const auth = new DigestAnswers(this.settings.credentials);

      const finish = (result: OutboundInviteResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(cancelGuard);
        req.signal?.removeEventListener('abort', onAbort);
        this.pendingInvites.delete(shutDown);
        resolve(result);
      };
      const sendCancel = () => {
        if (cancelSent || !current) return;
        cancelSent = true;
        log.info('CANCEL of the INVITE');
        this.transactions.request(requestAlongInvite(current, 'CANCEL', getHeader(current, 'To')!), peer, { onFinal: () => undefined });
        // §9.1: no final response to the INVITE 64×T1 after the CANCEL: the call is over anyway.
        const cancelled = current;
        cancelGuard = setTimeout(() => {
          this.transactions.abandon(cancelled);
          finish({ kind: 'cancelled' });
        }, 64 * this.timers.t1Ms);
      };
      const onAbort = () => {
        cancelRequested = true;
        // §9.1: a CANCEL only once a provisional response came; until then it waits for one.
        if (provisional) sendCancel();
      };
      req.signal?.addEventListener('abort', onAbort, { once: true });
      // The agent closing under a dial: CANCEL what rings (best effort), and the dial fails.
      const shutDown = () => {
        if (provisional) sendCancel();
        finish({ kind: 'failed', status: 0, reason: 'the SIP agent shut down while the call was being set up' });
      };
      this.pendingInvites.add(shutDown);

      const attempt = (authHeaders: SipHeader[]) => {
        provisional = false;
        current = {
          kind: 'request',
          method: 'INVITE',
          uri: requestUri,
          headers: [
            { name: 'Via', value: this.via(peer.transport) },
            { name: 'Max-Forwards', value: '70' },
            { name: 'From', value: from },
            { name: 'To', value: to },
            { name: 'Call-ID', value: req.callId },
            { name: 'CSeq', value: `${cseq++} INVITE` },
            { name: 'Contact', value: this.contact(req.fromNumber, peer.transport) },
            { name: 'Allow', value: ALLOW },
            { name: 'User-Agent', value: this.options.userAgent ?? 'voice-agent-media-edge' },
            ...authHeaders,
            { name: 'Content-Type', value: 'application/sdp' },
          ],
          body: req.sdp,
        };
        const invite = current;
        this.transactions.request(invite, peer, {
          onProvisional: (response) => {
            if (invite !== current) return;
            provisional = true;
            if (response.status > 100) {
              try {
                req.onProgress?.(response.status, response.reason);
              } catch (err) {
                log.warn({ err }, 'onProgress threw');
              }
            }
            if (cancelRequested) sendCancel();
          },
          onFinal: (outcome) => onFinal(invite, outcome),
        });
      };

      const onFinal = (invite: SipRequest, outcome: ClientOutcome) => {
        if (outcome.kind !== 'response') {
          if (settled) return;
          if (cancelRequested) return finish({ kind: 'cancelled' });
          const where = `${peer.address}:${peer.port} over ${peer.transport}`;
          const reason =
            outcome.kind === 'timeout'
              ? `trunk unreachable: no response from ${where} in ${(64 * this.timers.t1Ms) / 1000} s`
              : `trunk unreachable: ${where}: ${outcome.error.message}`;
          log.warn({ reason }, 'INVITE failed: trunk unreachable');
          return finish({ kind: 'failed', status: 0, reason });
        }
        const response = outcome.response;
        if (response.status < 300) {
          const dialog = this.uacDialog(invite, response, req.sdp, log, peer);
          if (settled || cancelRequested) {
            // The 200 crossed the CANCEL: the call was answered, so it is hung up.
            log.info('200 OK crossed the CANCEL: BYE');
            void dialog.handle.bye();
            return finish({ kind: 'cancelled' });
          }
          log.info({ status: response.status }, 'INVITE answered');
          return finish({ kind: 'answered', sdp: response.body, dialog: dialog.handle });
        }
        if (settled) return;
        if (cancelRequested) return finish({ kind: 'cancelled' });
        const retry = auth.answer(response, 'INVITE', requestUri);
        if (retry) {
          log.info({ status: response.status }, 'INVITE challenged: answering with digest credentials');
          return attempt(retry);
        }
        log.info({ status: response.status, reason: response.reason }, 'INVITE refused');
        finish({ kind: 'failed', status: response.status, reason: `${response.status} ${response.reason}`.trim() });
      };

      log.info({ to: req.toUri ?? req.toNumber, peer: `${peer.address}:${peer.port}` }, req.toUri ? 'INVITE to a SIP URI' : 'INVITE to the trunk');
      attempt([]);
    });
  }

  /** The dialog a 2xx to our INVITE makes, with its ACK sent (§13.2.2.4). */
  private uacDialog(invite: SipRequest, response: SipResponse, localSdp: string, log: Logger, sentTo: SipPeer): DialogState {
    const callId = getHeader(invite, 'Call-ID')!;
    const localTag = tagOf(getHeader(invite, 'From'))!;
    const key = dialogKey(callId, localTag);
    const existing = this.dialogs.get(key);
    if (existing) return existing;
    const contact = getHeaderValues(response, 'Contact')[0];
    const remoteTarget = (contact ? parseNameAddr(contact)?.uri : undefined) ?? invite.uri;
    const routeSet = getHeaderValues(response, 'Record-Route').reverse();
    const dialog = this.newDialog({
      callId,
      localTag,
      local: getHeader(invite, 'From')!,
      remote: getHeader(response, 'To')!,
      remoteTarget,
      routeSet,
      localCSeq: parseCSeq(getHeader(invite, 'CSeq')!)!.seq,
      localSdp,
      fallback: sentTo,
      log,
    });
    dialog.ack = this.inDialogRequest(dialog, 'ACK', dialog.localCSeq);
    this.transactions.send(dialog.ack, dialog.peer);
    return dialog;
  }

  private onStrayResponse(response: SipResponse): void {
    const cseq = parseCSeq(getHeader(response, 'CSeq') ?? '');
    if (cseq?.method !== 'INVITE' || response.status < 200 || response.status >= 300) return;
    const dialog = this.dialogs.get(dialogKey(getHeader(response, 'Call-ID') ?? '', tagOf(getHeader(response, 'From')) ?? ''));
    // A retransmitted 2xx: our ACK was lost, so it goes again.
    if (dialog?.ack) this.transactions.send(dialog.ack, dialog.peer);
  }

  // ------------------------------------------------------------------ dialogs

  private newDialog(init: {
    callId: string;
    localTag: string;
    local: string;
    remote: string;
    remoteTarget: string;
    routeSet: string[];
    localCSeq: number;
    remoteCSeq?: number;
    localSdp: string;
    fallback: SipPeer;
    log: Logger;
  }): DialogState {
    const firstHop = init.routeSet[0] ? parseNameAddr(init.routeSet[0])?.uri : init.remoteTarget;
    const dialog: DialogState = {
      callId: init.callId,
      localTag: init.localTag,
      local: init.local,
      remote: init.remote,
      remoteTarget: init.remoteTarget,
      routeSet: init.routeSet,
      peer: (firstHop && peerOfUri(firstHop, init.fallback.transport)) || init.fallback,
      localCSeq: init.localCSeq,
      remoteCSeq: init.remoteCSeq,
      localSdp: init.localSdp,
      ended: false,
      endedListeners: new Set(),
      infoListeners: new Set(),
      notifyListeners: new Set(),
      log: init.log,
      handle: undefined as unknown as SipDialog,
    };
    dialog.handle = {
      callId: init.callId,
      bye: () => this.bye(dialog),
      refer: (target) => this.refer(dialog, target),
      onEnded: (listener) => {
        dialog.endedListeners.add(listener);
        return () => dialog.endedListeners.delete(listener);
      },
      onInfo: (listener) => {
        dialog.infoListeners.add(listener);
        return () => dialog.infoListeners.delete(listener);
      },
      onNotify: (listener) => {
        dialog.notifyListeners.add(listener);
        return () => dialog.notifyListeners.delete(listener);
      },
    };
    this.dialogs.set(dialogKey(init.callId, init.localTag), dialog);
    return dialog;
  }

  private inDialogRequest(dialog: DialogState, method: string, seq: number, extra: SipHeader[] = [], body = ''): SipRequest {
    return {
      kind: 'request',
      method,
      uri: dialog.remoteTarget,
      headers: [
        { name: 'Via', value: this.via(dialog.peer.transport) },
        { name: 'Max-Forwards', value: '70' },
        { name: 'From', value: dialog.local },
        { name: 'To', value: dialog.remote },
        { name: 'Call-ID', value: dialog.callId },
        { name: 'CSeq', value: `${seq} ${method}` },
        ...dialog.routeSet.map((value) => ({ name: 'Route', value })),
        ...extra,
      ],
      body,
    };
  }

  /** An in-dialog request (BYE, REFER) with one digest answer per challenge kind; resolves with the final response, or undefined. */
  private dialogRequest(dialog: DialogState, method: string, extra: SipHeader[]): Promise<SipResponse | undefined> {
    const auth = new DigestAnswers(this.settings.credentials);
    return new Promise((resolve) => {
      const attempt = (authHeaders: SipHeader[]) => {
        const request = this.inDialogRequest(dialog, method, ++dialog.localCSeq, [...extra, ...authHeaders]);
        this.transactions.request(request, dialog.peer, {
          onFinal: (outcome) => {
            if (outcome.kind !== 'response') return resolve(undefined);
            const retry = auth.answer(outcome.response, method, request.uri);
            if (retry) return attempt(retry);
            resolve(outcome.response);
          },
        });
      };
      attempt([]);
    });
  }

  private async bye(dialog: DialogState): Promise<void> {
    if (dialog.ended) return;
    this.endDialog(dialog);
    dialog.log.info('BYE');
    const response = await this.dialogRequest(dialog, 'BYE', []);
    if (!response) dialog.log.debug('BYE not answered');
  }

  private async refer(dialog: DialogState, target: string): Promise<{ accepted: boolean; status: number }> {
    if (dialog.ended) return { accepted: false, status: 481 };
    const trunk = this.settings.trunk;
    const uri = /^sips?:/i.test(target) ? target : `sip:${encodeUser(target)}@${hostText(trunk.host)}${trunk.port === 5060 ? '' : `:${trunk.port}`}`;
    dialog.log.info({ target: uri }, 'REFER');
    const response = await this.dialogRequest(dialog, 'REFER', [
      { name: 'Refer-To', value: `<${uri}>` },
      { name: 'Referred-By', value: `<${parseNameAddr(dialog.local)?.uri ?? ''}>` },
      { name: 'Contact', value: this.contact('', dialog.peer.transport) },
    ]);
    const status = response?.status ?? 408;
    return { accepted: status >= 200 && status < 300, status };
  }

  /** The dialog is over: forgotten, and no ACK awaited. */
  private endDialog(dialog: DialogState): void {
    dialog.ended = true;
    this.dialogs.delete(dialogKey(dialog.callId, dialog.localTag));
  }

  // ------------------------------------------------------------------ requests from the far end

  private onRequest(request: SipRequest, tx: ServerTransaction | undefined): void {
    const method = request.method.toUpperCase();
    if (method === 'ACK') return this.onAck(request);
    if (!tx) return;
    if (method === 'CANCEL') return this.onCancel(request, tx);
    const toTag = tagOf(getHeader(request, 'To'));
    if (toTag) return this.onInDialog(request, tx, method, toTag);
    switch (method) {
      case 'INVITE':
        return this.onInvite(request, tx);
      case 'OPTIONS':
        tx.respond(this.sourceAllowed(tx.from.address) ? 200 : 403, { toTag: newTag(), headers: [{ name: 'Allow', value: ALLOW }, { name: 'Accept', value: 'application/sdp' }] });
        return;
      case 'BYE':
        tx.respond(481, { toTag: newTag() });
        return;
      default:
        tx.respond(405, { toTag: newTag(), headers: [{ name: 'Allow', value: ALLOW }] });
    }
  }

  private sourceAllowed(address: string): boolean {
    return checkAddress(this.allowed, address);
  }

  private onInvite(invite: SipRequest, tx: ServerTransaction): void {
    const callId = getHeader(invite, 'Call-ID')!;
    const log = this.options.logger.child({ sipCallId: callId });
    const localTag = newTag();
    const refuse = (status: number, reason?: string) => tx.respond(status, { toTag: localTag, ...(reason ? { reason } : {}) });
    // The source first: nothing else of a stranger's INVITE is looked at.
    if (!this.sourceAllowed(tx.from.address)) {
      this.refusedSources++;
      log.warn({ source: tx.from.address }, 'INVITE from a source that is not the trunk: 403');
      return void refuse(403);
    }
    tx.respond(100);
    const fromValue = getHeader(invite, 'From')!;
    const remoteTag = tagOf(fromValue);
    const contact = getHeaderValues(invite, 'Contact')[0];
    const remoteTarget = contact ? parseNameAddr(contact)?.uri : undefined;
    if (!remoteTag || !remoteTarget) return void refuse(400, `Bad Request (no ${remoteTag ? 'Contact' : 'From tag'})`);
    const contentType = getHeader(invite, 'Content-Type')?.split(';')[0].trim().toLowerCase();
    const sdp = contentType === 'application/sdp' ? invite.body : '';
    if (!offersG711(sdp)) {
      log.info('INVITE without G.711 audio: 488');
      return void refuse(488, 'Not Acceptable Here (no PCMU or PCMA offered)');
    }
    const handler = this.inviteHandler;
    if (!handler || this.closing) return void refuse(503);

    const cancelled = new AbortController();
    this.cancellations.set(tx, cancelled);
    let answered: Promise<SipDialog> | undefined;
    const incoming: IncomingInvite = {
      callId,
      fromNumber: userOf(parseNameAddr(fromValue)?.uri ?? ''),
      toNumber: userOf(invite.uri) || userOf(parseNameAddr(getHeader(invite, 'To')!)?.uri ?? ''),
      sourceAddress: tx.from.address,
      sdp,
      signal: cancelled.signal,
      reject: (status, reason) => {
        if (tx.finished || status < 300 || status > 699) return;
        log.info({ status, reason }, 'INVITE refused');
        refuse(status, reason);
      },
      answer: (answerSdp) => {
        answered ??= new Promise<SipDialog>((resolve, reject) => {
          if (tx.finished || cancelled.signal.aborted) return reject(new Error('the INVITE was cancelled or already answered'));
          const dialog = this.newDialog({
            callId,
            localTag,
            local: `${getHeader(invite, 'To')!};tag=${localTag}`,
            remote: fromValue,
            remoteTarget,
            routeSet: getHeaderValues(invite, 'Record-Route'),
            localCSeq: Math.floor(Math.random() * 10_000) + 1,
            remoteCSeq: parseCSeq(getHeader(invite, 'CSeq')!)!.seq,
            localSdp: answerSdp,
            fallback: tx.from,
            log,
          });
          const transport = tx.from.transport;
          dialog.awaitingAck = {
            tx,
            cseq: dialog.remoteCSeq!,
            onAck: () => resolve(dialog.handle),
          };
          tx.onNoAck = () => {
            log.warn('no ACK for the 200 OK: BYE');
            void dialog.handle.bye();
            reject(new Error('no ACK for the 200 OK'));
          };
          tx.respond(200, {
            toTag: localTag,
            headers: [
              { name: 'Contact', value: this.contact(incoming.toNumber, transport) },
              { name: 'Allow', value: ALLOW },
              { name: 'Content-Type', value: 'application/sdp' },
            ],
            body: answerSdp,
          });
          log.info('INVITE answered: 200');
        });
        return answered;
      },
    };
    log.info({ from: incoming.fromNumber, to: incoming.toNumber, source: incoming.sourceAddress }, 'INVITE from the trunk');
    // A decision that never comes must not hold the caller (nor the transaction) forever; a
    // 5xx also lets a carrier try its next origination URI.
    setTimeout(() => {
      if (tx.finished || answered) return;
      log.warn('no decision on the INVITE in time: 503');
      refuse(503, 'Service Unavailable (no decision in time)');
      cancelled.abort();
    }, this.options.inboundDecisionMs ?? 30_000).unref();
    handler(incoming).then(
      () => {
        if (!tx.finished && !answered) {
          log.warn('the INVITE handler decided nothing: 500');
          refuse(500);
        }
      },
      (err: unknown) => {
        log.error({ err }, 'the INVITE handler failed: 500');
        if (!tx.finished) refuse(500);
      },
    );
  }

  private readonly cancellations = new WeakMap<ServerTransaction, AbortController>();

  private onCancel(cancel: SipRequest, tx: ServerTransaction): void {
    const invite = this.transactions.inviteOf(cancel);
    if (!invite) return void tx.respond(481, { toTag: newTag() });
    tx.respond(200, { toTag: tagOf(getHeader(cancel, 'To')) ?? newTag() });
    if (invite.finished) return; // answered already: the CANCEL changes nothing
    this.options.logger.info({ sipCallId: getHeader(cancel, 'Call-ID') }, 'INVITE cancelled: 487');
    invite.respond(487, { toTag: newTag() });
    this.cancellations.get(invite)?.abort();
  }

  private onAck(ack: SipRequest): void {
    const dialog = this.dialogs.get(dialogKey(getHeader(ack, 'Call-ID')!, tagOf(getHeader(ack, 'To')) ?? ''));
    const awaiting = dialog?.awaitingAck;
    if (!dialog || !awaiting || parseCSeq(getHeader(ack, 'CSeq')!)!.seq !== awaiting.cseq) return;
    dialog.awaitingAck = undefined;
    awaiting.tx.acknowledged();
    awaiting.onAck?.();
  }

  private onInDialog(request: SipRequest, tx: ServerTransaction, method: string, toTag: string): void {
    const dialog = this.dialogs.get(dialogKey(getHeader(request, 'Call-ID')!, toTag));
    if (!dialog) {
      tx.respond(method === 'OPTIONS' ? 200 : 481, method === 'OPTIONS' ? { headers: [{ name: 'Allow', value: ALLOW }] } : {});
      return;
    }
    const seq = parseCSeq(getHeader(request, 'CSeq')!)!.seq;
    if (dialog.remoteCSeq !== undefined && seq <= dialog.remoteCSeq) {
      tx.respond(500, { reason: 'Server Internal Error (CSeq out of order)' });
      return;
    }
    dialog.remoteCSeq = seq;
    switch (method) {
      case 'BYE':
        tx.respond(200);
        dialog.log.info('BYE from the far end');
        this.endDialog(dialog);
        for (const listener of dialog.endedListeners) safely(() => listener('remote_bye'), dialog.log);
        return;
      case 'INVITE':
      case 'UPDATE': {
        // A session refresh (RFC 4028) or a re-offer of the same media: the session as it is.
        if (method === 'INVITE' && dialog.awaitingAck) return void tx.respond(491);
        if (request.body.trim() && !offersG711(request.body)) return void tx.respond(488);
        const withSdp = method === 'INVITE' || request.body.trim() !== '';
        tx.respond(200, {
          headers: [{ name: 'Contact', value: this.contact('', dialog.peer.transport) }, { name: 'Allow', value: ALLOW }, ...(withSdp ? [{ name: 'Content-Type', value: 'application/sdp' }] : [])],
          body: withSdp ? dialog.localSdp : '',
        });
        if (method === 'INVITE') dialog.awaitingAck = { tx, cseq: seq };
        return;
      }
      case 'OPTIONS':
        tx.respond(200, { headers: [{ name: 'Allow', value: ALLOW }, { name: 'Accept', value: 'application/sdp' }] });
        return;
      case 'INFO': {
        tx.respond(200);
        const contentType = (getHeader(request, 'Content-Type') ?? '').split(';')[0].trim().toLowerCase();
        for (const listener of dialog.infoListeners) safely(() => listener(contentType, request.body), dialog.log);
        return;
      }
      case 'NOTIFY': {
        // The progress of a REFER of ours (a message/sipfrag status line): the transfer reads it.
        tx.respond(200);
        const notify = { event: getHeader(request, 'Event') ?? '', subscriptionState: getHeader(request, 'Subscription-State') ?? '', body: request.body };
        dialog.log.info({ event: notify.event, progress: request.body.split(/\r?\n/)[0] }, 'NOTIFY');
        for (const listener of dialog.notifyListeners) safely(() => listener(notify), dialog.log);
        return;
      }
      default:
        tx.respond(405, { headers: [{ name: 'Allow', value: ALLOW }] });
    }
  }
}

/** Answers to digest challenges: each of 401 and 407 once per request (RFC 3261 §22.2, §22.3). */
class DigestAnswers {
  private readonly answered = new Map<number, SipHeader>();

  constructor(private readonly credentials: TrunkSettings['credentials']) {}

  /** The authorization headers for the next try, or undefined when this response is to be taken as final. */
  answer(response: SipResponse, method: string, uri: string): SipHeader[] | undefined {
    if ((response.status !== 401 && response.status !== 407) || !this.credentials || this.answered.has(response.status)) return undefined;
    const challenge = getHeader(response, response.status === 401 ? 'WWW-Authenticate' : 'Proxy-Authenticate');
    const fields = challenge ? digestFields(challenge) : undefined;
    if (!fields?.nonce || fields.realm === undefined) return undefined;
    if (fields.algorithm && fields.algorithm.toUpperCase() !== 'MD5') return undefined;
    const qops = (fields.qop ?? '').split(',').map((q) => q.trim().toLowerCase());
    const qop = qops.includes('auth') ? 'auth' : undefined;
    const cnonce = randomBytes(8).toString('hex');
    const nc = '00000001';
    const { username, password } = this.credentials;
    const response_ = digestResponse({ username, password, realm: fields.realm, method, uri, nonce: fields.nonce, qop, nc, cnonce });
    const parts = [
      `username="${username}"`,
      `realm="${fields.realm}"`,
      `nonce="${fields.nonce}"`,
      `uri="${uri}"`,
      `response="${response_}"`,
      'algorithm=MD5',
      ...(qop ? [`qop=${qop}`, `nc=${nc}`, `cnonce="${cnonce}"`] : []),
      ...(fields.opaque !== undefined ? [`opaque="${fields.opaque}"`] : []),
    ];
    this.answered.set(response.status, { name: response.status === 401 ? 'Authorization' : 'Proxy-Authorization', value: `Digest ${parts.join(', ')}` });
    return [...this.answered.values()];
  }
}

/** `Digest realm="x", nonce="y", qop="auth,auth-int"` → { realm: 'x', nonce: 'y', qop: 'auth,auth-int' }. */
function digestFields(challenge: string): Record<string, string> | undefined {
  if (!/^digest\s/i.test(challenge.trim())) return undefined;
  const fields: Record<string, string> = {};
  for (const part of splitHeaderList(challenge.trim().replace(/^digest\s+/i, ''))) {
    for (const [k, v] of Object.entries(parseParams(part))) if (v !== null) fields[k] = v.replace(/^"(.*)"$/, '$1');
  }
  return fields;
}


/** Whether an SDP offer has an audio stream with PCMU or PCMA (static 0/8, or named in an rtpmap). */
export function offersG711(sdp: string): boolean {
  let inAudio = false;
  for (const line of sdp.split(/\r?\n/)) {
    if (line.startsWith('m=')) {
      const [media, port, , ...formats] = line.slice(2).trim().split(/\s+/);
      inAudio = media === 'audio' && port !== '0';
      if (inAudio && (formats.includes('0') || formats.includes('8'))) return true;
    } else if (inAudio && /^a=rtpmap:\d+\s+(PCMU|PCMA)\/8000/i.test(line)) return true;
  }
  return false;
}

/** The user part of a sip:/sips:/tel: URI, unescaped (`sip:%2B1555@h` → `+1555`), or ''. */
function userOf(uri: string): string {
  const match = /^(?:sips?:([^@;?]+)@|tel:([^;?]+))/i.exec(uri);
  const user = match?.[1] ?? match?.[2] ?? '';
  try {
    return decodeURIComponent(user);
  } catch {
    return user;
  }
}

/** A number as a URI user part: E.164's + is allowed there (RFC 3261's user-unreserved). */
function encodeUser(user: string): string {
  return user.replace(/[^A-Za-z0-9\-_.!~*'()&=+$,;?/]/g, (c) => encodeURIComponent(c));
}

/** Where requests to a URI go: its host and port (5060), and its transport parameter or the given one. */
function peerOfUri(uri: string, transport: SipPeer['transport']): SipPeer | undefined {
  const match = /^sips?:(?:[^@]*@)?(\[[0-9a-fA-F:.]+\]|[^:;?>]+)(?::(\d+))?([^?>]*)/i.exec(uri);
  if (!match) return undefined;
  const params = parseParams(match[3] ?? '');
  const named = params.transport?.toLowerCase();
  return {
    transport: named === 'tcp' || named === 'udp' ? named : transport,
    address: match[1].replace(/^\[(.*)\]$/, '$1'),
    port: match[2] ? Number(match[2]) : 5060,
  };
}

const dialogKey = (callId: string, localTag: string): string => `${callId}\n${localTag}`;

function safely(fn: () => void, log: Logger): void {
  try {
    fn();
  } catch (err) {
    log.warn({ err }, 'a dialog listener threw');
  }
}
