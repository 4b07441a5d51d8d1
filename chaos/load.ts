// The chaos run's load, through the public API and the browser contract only: phone calls
// with every simulator outcome (some scheduled ahead, some cancelled, some with a retry
// policy, some to numbers on the do-not-call list), creates with Idempotency-Key sent again,
// signed hook triggers with duplicate delivery ids, contacts added to the list a batch is
// calling, web sessions left to expire, browser calls that talk, reads, and health polls.
import { randomUUID } from 'node:crypto';
import { signWebhookBody } from '../src/domain/hookSignature.js';
import { SIMULATOR_OUTCOMES } from '../src/telephony/simulator.js';
import { browserCall, type Bootstrap, type SpokenAnswers } from './browserCaller.js';
import type { Ledger } from './ledger.js';
import type { SeededRandom } from './seededRandom.js';

export interface LoadTeam {
  key: string;
  /** The key of the team of web sessions and browser calls (its slots are not taken by the phone load). */
  browserKey: string;
  scriptId: string;
  voiceScriptId: string;
  from: string;
  listId: string;
  hookPath: string;
  hookSecret: string;
}

export interface Answer {
  status: number | 'no-answer';
  json: any;
}

/** How long a request may take before the run counts it as unanswered (a stopped part). */
const REQUEST_TIMEOUT_MS = 20_000;

/** The public API as a client sees it; every exchange goes into the ledger. */
export class ApiClient {
  constructor(
    private readonly base: string,
    private readonly ledger: Ledger,
  ) {}

  async request(kind: string, method: string, path: string, opts: { key?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {}): Promise<Answer> {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.key) headers.Authorization = `Bearer ${opts.key}`;
    const body = opts.rawBody ?? (opts.body === undefined ? undefined : JSON.stringify(opts.body));
    if (body !== undefined) headers['Content-Type'] ??= 'application/json';
    const at = Date.now();
    try {
      const res = await fetch(this.base + path, { method, headers, body, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
      const text = await res.text();
      let json: any;
      try {
        json = text ? JSON.parse(text) : undefined;
      } catch {
        json = undefined;
      }
      const errorShaped = res.status < 300 || (json?.success === false && typeof json?.message === 'string');
      this.ledger.exchanges.push({ kind, method, path, status: res.status, at, retryAfter: res.headers.get('retry-after'), errorShaped, message: res.status >= 300 ? json?.message : undefined });
      return { status: res.status, json };
    } catch {
      this.ledger.exchanges.push({ kind, method, path, status: 'no-answer', at, retryAfter: null, errorShaped: true });
      return { status: 'no-answer', json: undefined };
    }
  }
}

const ok = (a: Answer) => typeof a.status === 'number' && a.status >= 200 && a.status < 300;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Callee endings: each simulator outcome, and plain numbers (answered, the script runs). */
const AREA_CODES = ['628', '415', '646', '312', '617', '702', '303', '206'];
const OUTCOME_SUFFIXES = [...Object.keys(SIMULATOR_OUTCOMES), '9000', '9000', '9000'];

export class Load {
  private seq = 0;
  private stopped = false;
  /** Calls scheduled ahead that a later step may cancel. */
  private cancellable: string[] = [];
  private liveBrowserCalls = 0;
  private readonly running: Promise<unknown>[] = [];

  constructor(
    private readonly api: ApiClient,
    private readonly ledger: Ledger,
    private readonly team: LoadTeam,
    private readonly random: SeededRandom,
    private readonly answers: SpokenAnswers,
    /** Unredeemed sessions are minted only until then, so they expire before the run ends. */
    private readonly mintUntil: number,
    private readonly onBrowserCallLive: (live: number) => void,
  ) {}

  /** A fresh callee number ending in `suffix`: unique in the run for 6,400 numbers per suffix. */
  private number(suffix: string): string {
    this.seq += 1;
    const area = AREA_CODES[Math.floor(this.seq / 800) % AREA_CODES.length];
    return `+1${area}${200 + (this.seq % 800)}${suffix}`;
  }

  private contact(to: string) {
    return { phone_number: to, first_name: 'Chaos', last_name: `C${this.seq}` };
  }

  async phoneCall(): Promise<void> {
    const suffix = this.random.pick(OUTCOME_SUFFIXES);
    const to = this.number(suffix);
    const ahead = this.random.chance(0.2);
    const body: Record<string, unknown> = { from_number: this.team.from, script_id: this.team.scriptId, contact: this.contact(to) };
    if (ahead) body.scheduled_time = new Date(Date.now() + this.random.int(10, 40) * 1000).toISOString();
    if (this.random.chance(0.25)) body.retry_policy = { 'rang-out': { max_attempts: 2, delay_seconds: 60 }, 'User unavailable': { max_attempts: 2, delay_seconds: 60 } };
    const answer = await this.api.request('create-phone-call', 'POST', '/api/v1/create-phone-call', { key: this.team.key, body });
    if (ok(answer)) {
      this.ledger.recordCall({ callId: answer.json.call_id, via: 'phone', toNumber: to, createdAt: Date.now(), scheduledAhead: ahead });
      if (ahead) this.cancellable.push(answer.json.call_id);
    }
  }

  async cancel(): Promise<void> {
    const callId = this.cancellable.shift();
    if (callId) await this.api.request('cancel-call', 'POST', `/api/v1/cancel-call/${callId}`, { key: this.team.key });
  }

  async doNotCall(): Promise<void> {
    const to = this.number('8000');
    const added = await this.api.request('do-not-call', 'POST', '/api/v1/do-not-call', { key: this.team.key, body: { phone_number: to, reason: 'chaos' } });
    if (!ok(added)) return;
    this.ledger.doNotCall.add(to);
    const answer = await this.api.request('create-phone-call (do-not-call)', 'POST', '/api/v1/create-phone-call', { key: this.team.key, body: { from_number: this.team.from, script_id: this.team.scriptId, contact: this.contact(to) } });
    if (ok(answer)) this.ledger.recordCall({ callId: answer.json.call_id, via: 'do-not-call', toNumber: to, createdAt: Date.now(), scheduledAhead: false });
  }

  /** A create with an Idempotency-Key, then the same request again: at once, concurrently, and later. */
  async idempotentCreate(): Promise<void> {
    const key = `chaos-${randomUUID()}`;
    const to = this.number('9000');
    const body = { from_number: this.team.from, script_id: this.team.scriptId, contact: this.contact(to) };
    const entry = { toNumber: to, callIds: [] as string[] };
    this.ledger.idempotent.set(key, entry);
    const send = async () => {
      const answer = await this.api.request('create-phone-call (Idempotency-Key)', 'POST', '/api/v1/create-phone-call', { key: this.team.key, body, headers: { 'Idempotency-Key': key } });
      if (ok(answer)) {
        entry.callIds.push(answer.json.call_id);
        this.ledger.recordCall({ callId: answer.json.call_id, via: 'idempotent', toNumber: to, createdAt: Date.now(), scheduledAhead: false });
      }
      return answer;
    };
    await Promise.all([send(), send()]);
    await sleep(this.random.int(200, 3000));
    // A client retries until it has an answer, as one whose first attempt met a fault would.
    for (let i = 0; i < 5; i++) {
      const again = await send();
      if (ok(again) || (typeof again.status === 'number' && again.status < 500 && again.status !== 409)) break;
      await sleep(2000);
    }
  }

  /** A signed trigger of the hook (schedule a call), delivered two or three times with one delivery id. */
  async hookTrigger(): Promise<void> {
    const deliveryId = `chaos-${randomUUID()}`;
    const to = this.number('9000');
    const rawBody = JSON.stringify({ phone_number: to, first_name: 'Hook', last_name: `H${this.seq}` });
    const headers = { 'X-Webhook-Signature': `sha256=${signWebhookBody(this.team.hookSecret, rawBody)}`, 'X-Webhook-Id': deliveryId };
    const send = async () => {
      const answer = await this.api.request('hook trigger', 'POST', this.team.hookPath, { rawBody, headers });
      if (ok(answer)) {
        const entry = this.ledger.hookDeliveries.get(deliveryId) ?? { toNumber: to, runIds: new Set<string>() };
        if (answer.json?.run_id) entry.runIds.add(answer.json.run_id);
        this.ledger.hookDeliveries.set(deliveryId, entry);
      }
    };
    await Promise.all(Array.from({ length: this.random.int(2, 3) }, send));
  }

  async growList(): Promise<void> {
    const numbers = Array.from({ length: this.random.int(1, 3) }, () => this.number(this.random.pick(['9000', '9000', '0001', '0006'])));
    const answer = await this.api.request('add list contacts', 'POST', `/api/v1/lists/${this.team.listId}/contacts`, {
      key: this.team.key,
      body: { contacts: numbers.map((phone_number, i) => ({ phone_number, first_name: `Batch${i}` })) },
    });
    if (ok(answer)) this.ledger.listContacts.push(...numbers);
  }

  /** A web session minted and never used: it must expire and give its slot back. */
  async unusedSession(): Promise<void> {
    if (Date.now() > this.mintUntil) return;
    const answer = await this.api.request('create-web-session', 'POST', '/api/v1/create-web-session', { key: this.team.browserKey, body: { script_id: this.team.voiceScriptId } });
    if (ok(answer)) this.ledger.sessions.set(answer.json.session_id, { mintedAt: Date.now(), expiresAt: Date.parse(answer.json.expires_at), redeemed: false });
  }

  async read(): Promise<void> {
    const known = [...this.ledger.calls.keys()];
    if (known.length && this.random.chance(0.5)) await this.api.request('get-call-status', 'GET', `/api/v1/get-call-status/${this.random.pick(known)}`, { key: this.team.key });
    else await this.api.request('list calls', 'GET', '/api/v1/calls?limit=5', { key: this.team.key });
  }

  /** A browser call that talks: minted, dialled and answered like a browser, at most `max` at once. */
  async browser(max: number): Promise<void> {
    if (this.liveBrowserCalls >= max) return;
    this.liveBrowserCalls += 1;
    try {
      const minted = await this.api.request('create-web-session (browser)', 'POST', '/api/v1/create-web-session', { key: this.team.browserKey, body: { script_id: this.team.voiceScriptId } });
      if (!ok(minted)) return;
      const sessionId: string = minted.json.session_id;
      this.ledger.sessions.set(sessionId, { mintedAt: Date.now(), expiresAt: Date.parse(minted.json.expires_at), redeemed: true });
      const record = { sessionId, startedAt: Date.now(), edgeKilled: false } as Ledger['browserCalls'][number];
      this.ledger.browserCalls.push(record);
      const bootstrap: Bootstrap = { ws_url: minted.json.ws_url, target: minted.json.target, headers: minted.json.headers };
      let live = false;
      record.outcome = await browserCall(bootstrap, this.answers, () => {
        live = true;
        this.onBrowserCallLive(1);
      });
      if (live) this.onBrowserCallLive(-1);
      record.endedAt = Date.now();
    } finally {
      this.liveBrowserCalls -= 1;
    }
  }

  /** Runs `lanes` lanes of weighted steps, a browser-call loop and a health poll until stop(). */
  start(lanes: number, browserCalls: number): void {
    const steps: Array<[number, () => Promise<void>]> = [
      [6, () => this.phoneCall()],
      [1, () => this.cancel()],
      [1, () => this.doNotCall()],
      [1, () => this.idempotentCreate()],
      [2, () => this.hookTrigger()],
      [1, () => this.growList()],
      [1, () => this.unusedSession()],
      [2, () => this.read()],
    ];
    const total = steps.reduce((a, [w]) => a + w, 0);
    const pick = () => {
      let r = this.random.next() * total;
      for (const [w, step] of steps) if ((r -= w) < 0) return step;
      return steps[0][1];
    };
    for (let i = 0; i < lanes; i++) {
      this.running.push(
        (async () => {
          while (!this.stopped) {
            await pick()();
            await sleep(this.random.int(300, 1200));
          }
        })(),
      );
    }
    if (browserCalls > 0) {
      this.running.push(
        (async () => {
          const calls: Promise<void>[] = [];
          while (!this.stopped) {
            // A browser call's failure is its outcome, never the run's.
            calls.push(this.browser(browserCalls).catch(() => {}));
            await sleep(this.random.int(3000, 8000));
          }
          await Promise.all(calls);
        })(),
      );
    }
    this.running.push(
      (async () => {
        while (!this.stopped) {
          const answer = await this.api.request('health', 'GET', '/api/v1/health');
          this.ledger.health.push({ at: Date.now(), status: answer.status, state: answer.json?.status, checks: answer.json?.checks });
          await sleep(1000);
        }
      })(),
    );
  }

  /** Stops issuing new work; resolves when the lanes and the browser calls have finished. */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.running);
  }
}
