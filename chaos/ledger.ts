// What the chaos run's load asked and was answered, through the public API, kept for the
// invariants: every exchange (or its missing answer), the calls each 2xx create returned,
// idempotency keys and their answers, hook deliveries, web sessions and health samples.

/** One HTTP exchange: the status, or 'no-answer' when the connection failed (a part was down or killed). */
export interface Exchange {
  kind: string;
  method: string;
  path: string;
  status: number | 'no-answer';
  at: number;
  retryAfter: string | null;
  /** Whether a non-2xx answer had the documented shape { success: false, message }. */
  errorShaped: boolean;
  message?: string;
}

export interface CreatedCall {
  callId: string;
  /** How it was made: phone, idempotent, hook, batch, browser. */
  via: string;
  toNumber: string | null;
  createdAt: number;
  scheduledAhead: boolean;
}

export interface HealthSample {
  at: number;
  status: number | 'no-answer';
  state?: string;
  checks?: Record<string, string>;
}

export interface BrowserCallRecord {
  sessionId: string;
  /** Set once the session is redeemed (read from the database at the end). */
  callId?: string;
  startedAt: number;
  endedAt?: number;
  /** Whether the media edge was killed while this call was live. */
  edgeKilled: boolean;
  /** How the caller's side ended: the agent's BYE, or an error (the edge gone). */
  outcome?: string;
}

export class Ledger {
  readonly exchanges: Exchange[] = [];
  readonly calls = new Map<string, CreatedCall>();
  /** Idempotency-Key → every call id a 2xx answer gave for it. */
  readonly idempotent = new Map<string, { toNumber: string; callIds: string[] }>();
  /** Hook delivery ids answered 2xx, with the run ids they got. */
  readonly hookDeliveries = new Map<string, { toNumber: string; runIds: Set<string> }>();
  readonly sessions = new Map<string, { mintedAt: number; expiresAt: number; redeemed: boolean }>();
  readonly health: HealthSample[] = [];
  readonly browserCalls: BrowserCallRecord[] = [];
  /** Numbers on the do-not-call list, and contacts added to the batch's list (2xx). */
  readonly doNotCall = new Set<string>();
  readonly listContacts: string[] = [];
  /** Slot samples: team id → the most live slots seen at once; and the samples taken. */
  maxSlots = 0;
  slotSamples = 0;
  /** Times a sample saw more live slots than the ceiling. */
  slotOverruns = 0;

  recordCall(call: CreatedCall): void {
    if (!this.calls.has(call.callId)) this.calls.set(call.callId, call);
  }
}
