/**
 * RFC 3261 §17 transactions over the UDP/TCP transport: client transactions retransmit a
 * request over UDP until a response comes (INVITE: Timer A/B, ACK of a non-2xx within the
 * transaction, Timer D; non-INVITE: Timer E/F/K), server transactions answer a retransmitted
 * request from the transaction (INVITE: 100 Trying at once, a final non-2xx repeated until its
 * ACK, Timer G/H/I; a 2xx repeated until the dialog says its ACK came; non-INVITE: Timer J).
 * The INVITE's 100 Trying is the transaction user's to send (after its own checks).
 * Transactions are keyed by the top Via branch and the CSeq method (a CANCEL shares its
 * INVITE's branch). What a transaction does not absorb goes to the transaction user.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from '../../../logging/logger.js';
import { createResponse, getHeader, getHeaderValues, parseCSeq, serializeSipMessage, topViaBranch, type SipHeader, type SipMessage, type SipRequest, type SipResponse } from '../message.js';
import { responseDestination, SipTransport, SipTransportError, type SipPeer } from './transport.js';

/** RFC 3261's timer values (§17.1.1.1, table 4); tests shorten them. */
export interface SipTimers {
  /** RTT estimate (default 500 ms): retransmissions start here, transactions give up at 64×T1. */
  t1Ms: number;
  /** Longest retransmit interval of non-INVITE requests and INVITE responses (default 4 s). */
  t2Ms: number;
  /** How long the network may hold a message (default 5 s): Timer K and I. */
  t4Ms: number;
}

export const DEFAULT_SIP_TIMERS: SipTimers = { t1Ms: 500, t2Ms: 4000, t4Ms: 5000 };

export const newBranch = (): string => `z9hG4bK${randomBytes(10).toString('hex')}`;

export type ClientOutcome = { kind: 'response'; response: SipResponse } | { kind: 'timeout' } | { kind: 'transport_error'; error: SipTransportError };

export interface ClientTransactionHandlers {
  /** A 1xx (each distinct one, 100 included). */
  onProvisional?: (response: SipResponse) => void;
  /** The final response, a timeout (Timer B/F) or a transport failure; called once. */
  onFinal: (outcome: ClientOutcome) => void;
}

interface ClientTransaction {
  key: string;
  request: SipRequest;
  text: string;
  to: SipPeer;
  invite: boolean;
  state: 'calling' | 'proceeding' | 'completed' | 'terminated';
  handlers: ClientTransactionHandlers;
  retransmit?: NodeJS.Timeout;
  timeout?: NodeJS.Timeout;
  linger?: NodeJS.Timeout;
  /** The ACK of a non-2xx final response, repeated for each retransmission of that response. */
  ack?: SipRequest;
}

export interface ServerTransaction {
  readonly request: SipRequest;
  readonly from: SipPeer;
  /** Sends a response; for an INVITE, a 2xx is repeated until `acknowledged()` (or 64×T1, then `onNoAck`). */
  respond(status: number, options?: { reason?: string; toTag?: string; headers?: SipHeader[]; body?: string }): SipResponse;
  /** The dialog received the ACK of this INVITE's 2xx. */
  acknowledged(): void;
  /** Whether a final response was sent. */
  readonly finished: boolean;
  /** A 2xx to this INVITE was never acknowledged. */
  onNoAck?: () => void;
}

interface ServerEntry {
  tx: ServerTransaction;
  lastResponse?: SipResponse;
  state: 'proceeding' | 'completed' | 'accepted' | 'confirmed' | 'terminated';
  retransmit?: NodeJS.Timeout;
  timeout?: NodeJS.Timeout;
}

export interface TransactionUser {
  /** A request no server transaction absorbed: a new request (with its transaction), or an ACK of a 2xx (tx undefined). */
  onRequest(request: SipRequest, tx: ServerTransaction | undefined): void;
  /** A response no client transaction matched (a retransmitted 2xx to an INVITE, whose ACK the dialog repeats). */
  onStrayResponse(response: SipResponse, from: SipPeer): void;
}

const transactionKey = (branch: string, method: string): string => `${branch}\n${method.toUpperCase()}`;

export class TransactionLayer {
  private readonly clients = new Map<string, ClientTransaction>();
  private readonly servers = new Map<string, ServerEntry>();
  private user?: TransactionUser;

  constructor(
    private readonly transport: SipTransport,
    private readonly timers: SipTimers,
    private readonly logger: Logger,
  ) {}

  /** The receiver of what transactions do not absorb. */
  attach(user: TransactionUser): void {
    this.user = user;
  }

  get pending(): { client: number; server: number } {
    return { client: this.clients.size, server: this.servers.size };
  }

  /** Stops every timer (the agent is closing). */
  close(): void {
    for (const tx of this.clients.values()) this.clearClient(tx);
    for (const entry of this.servers.values()) {
      clearTimeout(entry.retransmit);
      clearTimeout(entry.timeout);
    }
    this.clients.clear();
    this.servers.clear();
  }

  // ------------------------------------------------------------------ client

  /** Starts a client transaction for `request` (its top Via must carry a fresh branch). */
  request(request: SipRequest, to: SipPeer, handlers: ClientTransactionHandlers): void {
    const branch = topViaBranch(request)!;
    const tx: ClientTransaction = {
      key: transactionKey(branch, request.method),
      request,
      text: serializeSipMessage(request),
      to,
      invite: request.method === 'INVITE',
      state: 'calling',
      handlers,
    };
    this.clients.set(tx.key, tx);
    const t1 = this.timers.t1Ms;
    if (to.transport === 'udp') this.scheduleClientRetransmit(tx, t1);
    // Timer B (INVITE) or F (non-INVITE).
    tx.timeout = setTimeout(() => this.finishClient(tx, { kind: 'timeout' }), 64 * t1);
    this.transmit(tx);
  }

  private transmit(tx: ClientTransaction): void {
    this.transport.send(tx.request, tx.to).catch((err: unknown) => {
      const error = err instanceof SipTransportError ? err : new SipTransportError(String(err));
      if (tx.state === 'calling' || tx.state === 'proceeding') this.finishClient(tx, { kind: 'transport_error', error });
    });
  }

  /** Timer A (INVITE: doubling) or E (non-INVITE: doubling up to T2, at T2 once a 1xx came). */
  private scheduleClientRetransmit(tx: ClientTransaction, interval: number): void {
    tx.retransmit = setTimeout(() => {
      if (tx.state !== 'calling' && !(tx.state === 'proceeding' && !tx.invite)) return;
      this.transmit(tx);
      const next = tx.invite ? interval * 2 : tx.state === 'proceeding' ? this.timers.t2Ms : Math.min(interval * 2, this.timers.t2Ms);
      this.scheduleClientRetransmit(tx, next);
    }, interval);
  }

  private finishClient(tx: ClientTransaction, outcome: ClientOutcome): void {
    if (tx.state === 'completed' || tx.state === 'terminated') return;
    this.clearClient(tx);
    const final = outcome.kind === 'response' ? outcome.response : undefined;
    if (final && tx.to.transport === 'udp' && (!tx.invite || final.status >= 300)) {
      // Timer D (INVITE: 64×T1, the 32 s of RFC 3261 at the default T1) or K (T4) absorbs the final response's retransmissions.
      tx.state = 'completed';
      tx.linger = setTimeout(() => this.clients.delete(tx.key), tx.invite ? 64 * this.timers.t1Ms : this.timers.t4Ms);
    } else if (final && tx.invite && final.status < 300) {
      // RFC 6026 Accepted: later 2xx pass to the dialog (which repeats its ACK) for 64×T1.
      tx.state = 'terminated';
      tx.linger = setTimeout(() => this.clients.delete(tx.key), 64 * this.timers.t1Ms);
    } else {
      tx.state = 'terminated';
      this.clients.delete(tx.key);
    }
    try {
      tx.handlers.onFinal(outcome);
    } catch (err) {
      this.logger.error({ err }, 'SIP transaction user failed on a final response');
    }
  }

  /** Destroys a client transaction without a final response (§9.1: an INVITE whose CANCEL went unanswered for 64×T1). */
  abandon(request: SipRequest): void {
    const key = transactionKey(topViaBranch(request) ?? '', request.method);
    const tx = this.clients.get(key);
    if (!tx || tx.state === 'completed' || tx.state === 'terminated') return;
    tx.state = 'terminated';
    this.clearClient(tx);
    this.clients.delete(key);
  }

  private clearClient(tx: ClientTransaction): void {
    clearTimeout(tx.retransmit);
    clearTimeout(tx.timeout);
    clearTimeout(tx.linger);
  }

  private onResponse(response: SipResponse, from: SipPeer): void {
    const branch = topViaBranch(response);
    const cseq = parseCSeq(getHeader(response, 'CSeq')!);
    const tx = branch && cseq ? this.clients.get(transactionKey(branch, cseq.method)) : undefined;
    if (!tx) {
      this.user?.onStrayResponse(response, from);
      return;
    }
    if (response.status < 200) {
      if (tx.state === 'calling' || tx.state === 'proceeding') {
        tx.state = 'proceeding';
        // Timer B runs only until the first provisional response: a call may ring as long as
        // the transaction user lets it (it ends the wait with a CANCEL).
        if (tx.invite) {
          clearTimeout(tx.retransmit);
          clearTimeout(tx.timeout);
        }
        tx.handlers.onProvisional?.(response);
      }
      return;
    }
    if (tx.invite && response.status >= 300) {
      tx.ack ??= requestAlongInvite(tx.request, 'ACK', getHeader(response, 'To')!);
      // Each copy of the final response is acknowledged again (§17.1.1.2).
      this.transport.send(tx.ack, tx.to).catch(() => undefined);
    }
    if (tx.state === 'completed' || tx.state === 'terminated') {
      if (tx.invite && response.status < 300) this.user?.onStrayResponse(response, from);
      return;
    }
    this.finishClient(tx, { kind: 'response', response });
  }

  // ------------------------------------------------------------------ server

  /** Every message from the transport passes here first. */
  receive(message: SipMessage, from: SipPeer): void {
    if (message.kind === 'response') {
      this.onResponse(message, from);
      return;
    }
    const branch = topViaBranch(message);
    const method = message.method.toUpperCase();
    if (!branch) {
      // Pre-RFC 3261 peers: answered without a transaction (ACKs pass to the dialogs).
      if (method === 'ACK') this.user?.onRequest(message, undefined);
      else this.send(createResponse(message, 400, { reason: 'Bad Request (no Via branch)', toTag: 'nobranch' }), responseDestination(message, from));
      return;
    }
    if (method === 'ACK') {
      const entry = this.servers.get(transactionKey(branch, 'INVITE'));
      if (entry && entry.state === 'completed') {
        // The ACK of our non-2xx: Timer I absorbs its retransmissions.
        entry.state = 'confirmed';
        clearTimeout(entry.retransmit);
        clearTimeout(entry.timeout);
        entry.timeout = setTimeout(() => this.servers.delete(transactionKey(branch, 'INVITE')), from.transport === 'udp' ? this.timers.t4Ms : 0);
        return;
      }
      if (entry && entry.state === 'confirmed') return;
      this.user?.onRequest(message, undefined);
      return;
    }
    const key = transactionKey(branch, method);
    const existing = this.servers.get(key);
    if (existing) {
      // A retransmission: what we last said, again.
      if (existing.lastResponse && existing.state !== 'confirmed') this.send(existing.lastResponse, responseDestination(existing.tx.request, from));
      return;
    }
    const entry = this.createServer(message, from, key);
    this.user?.onRequest(message, entry.tx);
  }

  private createServer(request: SipRequest, from: SipPeer, key: string): ServerEntry {
    const invite = request.method.toUpperCase() === 'INVITE';
    const destination = responseDestination(request, from);
    const udp = from.transport === 'udp';
    const t1 = this.timers.t1Ms;
    const entry: ServerEntry = { state: 'proceeding' } as ServerEntry;
    const repeatUntil = (interval: number, stillRepeating: () => boolean) => {
      entry.retransmit = setTimeout(() => {
        if (!stillRepeating() || !entry.lastResponse) return;
        this.send(entry.lastResponse, destination);
        repeatUntil(Math.min(interval * 2, this.timers.t2Ms), stillRepeating);
      }, interval);
    };
    const tx: ServerTransaction = {
      request,
      from,
      get finished() {
        return entry.state !== 'proceeding';
      },
      respond: (status, options = {}) => {
        const response = createResponse(request, status, options);
        if (entry.state !== 'proceeding') return response; // one final response per transaction
        entry.lastResponse = response;
        this.send(response, destination);
        if (status < 200) return response;
        if (!invite) {
          // Timer J: retransmitted requests get this answer for 64×T1 (UDP).
          entry.state = 'completed';
          entry.timeout = setTimeout(() => this.servers.delete(key), udp ? 64 * t1 : 0);
        } else if (status < 300) {
          // The 2xx is the dialog's to repeat (§13.3.1.4) until the ACK; over TCP the transport is reliable.
          entry.state = 'accepted';
          if (udp) repeatUntil(t1, () => entry.state === 'accepted');
          entry.timeout = setTimeout(() => {
            const unacknowledged = entry.state === 'accepted';
            entry.state = 'terminated';
            clearTimeout(entry.retransmit);
            this.servers.delete(key);
            if (unacknowledged) tx.onNoAck?.();
          }, 64 * t1);
        } else {
          // Timer G repeats the non-2xx until its ACK, Timer H gives up.
          entry.state = 'completed';
          if (udp) repeatUntil(t1, () => entry.state === 'completed');
          entry.timeout = setTimeout(() => {
            clearTimeout(entry.retransmit);
            this.servers.delete(key);
          }, 64 * t1);
        }
        return response;
      },
      acknowledged: () => {
        if (entry.state !== 'accepted') return;
        entry.state = 'confirmed';
        clearTimeout(entry.retransmit);
      },
    };
    entry.tx = tx;
    this.servers.set(key, entry);
    return entry;
  }

  /** The INVITE server transaction a CANCEL names (same branch), while it has not answered finally. */
  inviteOf(cancel: SipRequest): ServerTransaction | undefined {
    const branch = topViaBranch(cancel);
    return branch ? this.servers.get(transactionKey(branch, 'INVITE'))?.tx : undefined;
  }

  /** Sends a message outside any transaction (responses; the ACK of a 2xx). */
  send(message: SipMessage, to: SipPeer): void {
    this.transport.send(message, to).catch((err: unknown) => this.logger.debug({ err, to }, 'SIP send failed'));
  }
}

/**
 * A request that goes with an INVITE, hop by hop (§9.1 CANCEL, §17.1.1.3 the ACK of a
 * non-2xx): the INVITE's Request-URI, top Via, From, Call-ID, CSeq number and Route, with
 * the given To (the INVITE's for a CANCEL, the response's for the ACK).
 */
export function requestAlongInvite(invite: SipRequest, method: 'CANCEL' | 'ACK', to: string): SipRequest {
  const seq = parseCSeq(getHeader(invite, 'CSeq')!)!.seq;
  return {
    kind: 'request',
    method,
    uri: invite.uri,
    headers: [
      { name: 'Via', value: getHeaderValues(invite, 'Via')[0] },
      { name: 'Max-Forwards', value: '70' },
      { name: 'From', value: getHeader(invite, 'From')! },
      { name: 'To', value: to },
      { name: 'Call-ID', value: getHeader(invite, 'Call-ID')! },
      { name: 'CSeq', value: `${seq} ${method}` },
      ...getHeaderValues(invite, 'Route').map((value) => ({ name: 'Route', value })),
    ],
    body: '',
  };
}
