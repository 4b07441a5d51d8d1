/**
 * The media edge with its voice: the SIP/WebRTC server (server.ts), a conversation engine
 * and a recorder per call, the calls' progress reported to the service, and a Temporal
 * worker on this instance's own task queue that runs the speech activities of the calls
 * it holds (docs/media-edge.md).
 *
 *   browser ──SIP/WebRTC──▶ server ──onCall──▶ engine + recorder ──▶ LiveCalls ◀── activities ◀── call workflow
 *                                   └── answered / ended events ──▶ API /internal/v1/calls/{id}/events
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { NativeConnection, Worker } from '@temporalio/worker';
import { MEDIA_EDGE_DIAL_TASK_QUEUE, mediaEdgeTaskQueue, type AskCallerResult, type EdgeSystemNotes } from '../../workflows/contracts.js';
import type { SystemNote } from '../domain/calls.js';
import type { Logger } from '../logging/logger.js';
import { recordingKey } from '../recordings/keys.js';
import type { RecordingStore } from '../recordings/store.js';
import { tracedWorkerOptions } from '../tracing/tracing.js';
import { createMediaEdgeActivities } from './activities.js';
import { createEndpointing, type Endpointing } from './audio/endpointingConfig.js';
import { CallEventReporter } from './callEvents.js';
import { CallTransfers } from './callTransfer.js';
import { EarlyModelTurns } from './conversation/earlyModelTurns.js';
import { ConversationEngine } from './conversation/engine.js';
import { LiveCalls, type CallConversation, type LiveCall } from './liveCalls.js';
import type { AudioBand, ChannelCloseReason, MediaChannel } from './media/channel.js';
import { answerInboundCalls } from './inboundPhoneCalls.js';
import { CallEndings, DEFAULT_CALL_ENDINGS_WAIT_MS } from './callEndings.js';
import { CallRecorder } from './recording/callRecorder.js';
import { uploadRecording, type RecordingRetryPolicy } from './recording/recordingUpload.js';
import { PhoneDialer, type PhoneCall } from './phoneDialer.js';
import { openRtpSession } from './rtp/rtpSession.js';
import { startConfiguredMediaEdge, type MediaEdge, type MediaEdgeConfig } from './server.js';
import { SipTrunkAgent } from './sip/trunk/sipTrunkAgent.js';
import type { SipTimers } from './sip/trunk/transactions.js';
import type { FrameClock } from './webrtc/frameClock.js';
import { parseTrunkSettings, type TrunkSettings } from './sip/trunk/trunkSettings.js';
import { failoverNote } from './speech/fallbackEngines.js';
import type { SpeechRecognizer, SpeechSynthesizer } from './speech/interfaces.js';
import type { SpeechEngines } from './speech/speechEngines.js';
import type { ChatCompletionsClient } from '../llm/chatCompletions.js';
import { checkJson } from '../llm/jsonSchema.js';

/** A converse tool call's arguments against the tool's parameters (checked as a schema when the script was created). */
function checkToolArguments(schema: Record<string, unknown>, value: unknown): string | undefined {
  const checked = checkJson(schema, value);
  return checked.ok ? undefined : checked.message;
}

export interface VoiceEdgeOptions {
  config: MediaEdgeConfig;
  logger: Logger;
  speech: SpeechEngines;
  /** How each call's turns are delimited (default: the energy endpointer with its default hangovers). */
  endpointing?: Endpointing;
  recordings: RecordingStore;
  /** Temporal frontend host:port and namespace. */
  temporalAddress: string;
  temporalNamespace: string;
  /** This instance's name in its task queue (default: host name, pid and a random suffix). */
  instanceId?: string;
  /**
   * The SIP trunk (docs/telephony.md): with one, the edge also dials phone calls (it polls the
   * shared dial queue). Default: the SIP_* settings of the environment; null: no trunk.
   */
  trunk?: TrunkSettings | null;
  /** No RTP from a phone call for this long ends it dropout (default 10 s; tests shorten it). */
  rtpInactivityMs?: number;
  /** How long a transfer step rings the person before it gives up (default 30 s, callTransfer.ts; tests shorten it). */
  transferRingTimeoutMs?: number;
  /** The trunk agent's RFC 3261 timers (tests shorten T1, so Timer B, 64×T1, takes seconds). */
  trunkTimers?: Partial<SipTimers>;
  /** The 20 ms clock of the phone calls' RTP (default: the process's shared one; bench/sipCalls.ts times its ticks). */
  rtpClock?: FrameClock;
  /** How long close() waits for the calls' ends and recordings to be reported (default 25 s, callEndings.ts). */
  closeWaitMs?: number;
  /** The language model of converse steps (docs/agents.md); absent: their model turns fail not_configured (on_error). */
  llm?: ChatCompletionsClient;
}

export interface VoiceEdge {
  readonly url: string;
  readonly taskQueue: string;
  readonly calls: LiveCalls;
  /** The conversation engine of each call held now (benchmarks read its turn latencies). */
  readonly engines: ReadonlyMap<string, ConversationEngine>;
  /** The SIP trunk's user agent, when the edge has a trunk. */
  readonly trunkAgent?: SipTrunkAgent;
  /** Hangs up every call, stops the worker and the server. */
  close(): Promise<void>;
}

/** Asks a worker to stop unless it is already stopping (shutdown() of a draining worker throws). */
function stopWorker(worker: Worker | undefined): void {
  if (worker?.getState() === 'RUNNING') worker.shutdown();
}

/** Why the media ended, as the call's end reason; the agent's own hang-up is the workflow's to report. */
const END_REASON_OF: Record<ChannelCloseReason, string | undefined> = {
  remote_hangup: 'User Hangup',
  media_lost: 'connection_lost',
  local_hangup: undefined,
};

/**
 * One call's speech engines: a cloud engine that fails the call is replaced by the offline
 * one (speechEngines.ts), logged, and said in a `speech_engine` System Note that the call's
 * next answer to the workflow carries (`takeNotes`). The workflow writes it with its own
 * notes: the edge's ended-call note route (callEvents.ts) takes notes only once the call has
 * ended, because the workflow's own note writes are positional. A phone call's audio
 * (`band` telephone) is heard by the recognisers chosen for that band (recognizerChoice.ts).
 */
export function callSpeechOf(
  speech: SpeechEngines,
  log: Logger,
  band: AudioBand = 'wideband',
): { synthesizer: SpeechSynthesizer; recognizer: SpeechRecognizer; takeNotes: () => SystemNote[] } {
  const notes: SystemNote[] = [];
  const engines = speech.forCall((failover) => {
    log.warn({ stage: failover.stage, failed: failover.failed, fallback: failover.fallback, error: failover.error }, 'speech engine failed: the offline engine takes over the call');
    notes.push({ at: new Date().toISOString(), kind: 'speech_engine', text: failoverNote(failover), data: { stage: failover.stage, failed: failover.failed, fallback: failover.fallback } });
  }, { band });
  return { ...engines, takeNotes: () => notes.splice(0) };
}

/**
 * The engine as the activities use it: an unintelligible utterance counts as silence (the
 * workflow reprompts). Each answer carries the System Notes the call's speech engines left
 * since the previous one (`takeNotes`), for the workflow to write.
 */
export function conversationOf(engine: ConversationEngine, takeNotes: () => SystemNote[], converse: { endSilenceMs?: number } = {}): CallConversation {
  const withNotes = <T extends object>(answer: T): T & EdgeSystemNotes => {
    const systemNotes = takeNotes();
    return systemNotes.length > 0 ? { ...answer, systemNotes } : answer;
  };
  return {
    speak: (text, opts) => engine.speak(text, opts).then(({ interrupted, playedMs }) => withNotes({ interrupted, playedMs })),
    speakSentences: (source, opts) => engine.speakSentences(source, opts).then(withNotes),
    async ask(prompt, hint, opts): Promise<AskCallerResult> {
      const heard = await engine.ask(prompt, hint, opts);
      if (heard.kind !== 'utterance' || heard.text.trim() === '') return withNotes({ kind: 'silence' as const });
      return withNotes({ kind: 'utterance' as const, text: heard.text, recognitionMs: Math.round(heard.recognisedAt - heard.speechEndedAt), ...(heard.keyed ? { keyed: true } : {}) });
    },
    async listen({ converseTurn, ...opts }) {
      // A converse turn's answer waits on nothing but its text: the shorter hangover, the faster decoding.
      const heard = await engine.listen(converseTurn ? { ...opts, hint: { expect: 'free', latency: 'low' }, endSilenceMs: converse.endSilenceMs } : opts);
      if (heard.kind !== 'utterance' || heard.text.trim() === '') return { kind: 'silence' as const };
      return { kind: 'utterance' as const, text: heard.text, recognitionMs: Math.round(heard.recognisedAt - heard.speechEndedAt), speechEndedAt: heard.speechEndedAt };
    },
  };
}

export async function startVoiceEdge(options: VoiceEdgeOptions): Promise<VoiceEdge> {
  const { config, logger, speech, recordings } = options;
  const instanceId = options.instanceId ?? `${hostname().replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 40)}-${process.pid}-${randomUUID().slice(0, 8)}`;
  const taskQueue = mediaEdgeTaskQueue(instanceId);
  const calls = new LiveCalls();
  const engines = new Map<string, ConversationEngine>();
  const reporter = new CallEventReporter({ apiUrl: config.API_URL, secret: config.MEDIA_EDGE_SECRET, logger });
  const recordingRetry: RecordingRetryPolicy = {
    attempts: config.MEDIA_EDGE_RECORDING_UPLOAD_ATTEMPTS,
    firstDelayMs: config.MEDIA_EDGE_RECORDING_RETRY_FIRST_MS,
    maxDelayMs: config.MEDIA_EDGE_RECORDING_RETRY_MAX_MS,
  };
  const endpointing = options.endpointing ?? createEndpointing({});
  // A converse turn's next model turn, asked as soon as the caller's answer is recognised (earlyModelTurns.ts).
  const earlyTurns = new EarlyModelTurns();
  await speech.warmUp();
  await endpointing.warmUp();

  /** A conversation engine over a channel: a call's, or a transfer's person's leg (callTransfer.ts). */
  const engineOf = (channel: MediaChannel, log: Logger, callSpeech = callSpeechOf(speech, log, channel.band)) =>
    new ConversationEngine({
      channel,
      synthesizer: callSpeech.synthesizer,
      recognizer: callSpeech.recognizer,
      endpointer: endpointing.create(),
      // The energy endpointer a failed voice-activity model leaves the call to keeps the configured hangovers and pause.
      endpointing: endpointing.energySettings,
      onEndpointerError: (err) => log.warn({ err }, 'voice-activity endpointer failed: energy endpointing for the rest of the call'),
      echoMarginDb: endpointing.echoMarginDb,
      digitTimeoutMs: config.DTMF_DIGIT_TIMEOUT_MS,
    });
  /** Each call's end being reported (its `ended` event, its recording): close() waits for them. */
  const callEnds = new Set<Promise<void>>();
  const transfers = new CallTransfers({ engineFor: (channel, log) => engineOf(channel, log), ringTimeoutMs: options.transferRingTimeoutMs, logger: logger.child({ component: 'call-transfer' }) });

  // A browser call (SIP over WebSocket) or a phone call through the trunk: the same from here on.
  const onCall = (call: PhoneCall) => {
    const log = logger.child({ callId: call.callId, codec: call.codec });
    const callSpeech = callSpeechOf(speech, log, call.channel.band);
    const engine = engineOf(call.channel, log, callSpeech);
    let recorder: CallRecorder | undefined;
    engines.set(call.callId, engine);
    const live: LiveCall = { callId: call.callId, channel: call.channel, conversation: conversationOf(engine, callSpeech.takeNotes, { endSilenceMs: endpointing.settings.ENDPOINTER_CONVERSE_END_SILENCE_MS }), hangUp: () => call.hangUp(), sipDialog: call.dialog };
    calls.add(live);
    log.info('call connected');
    const ending = call.channel.closed.then(async (reason) => {
      engine.close();
      engines.delete(call.callId);
      // A caller handed to a person: the transfer activity's answer ends the call (completed / transferred).
      const endReason = live.handedOver ? undefined : END_REASON_OF[reason];
      log.info({ reason }, 'call media ended');
      await Promise.all([
        endReason ? reporter.report(call.callId, { type: 'ended', reason: endReason, event_id: `media-edge-ended-${call.callId}` }) : undefined,
        // Retried while the store fails, then discarded with a System Note: never a spool left behind.
        recorder &&
          uploadRecording(recorder, {
            policy: recordingRetry,
            logger: log,
            noteLost: async (text) => {
              await reporter.addSystemNote(call.callId, { kind: 'recording_lost', text });
            },
          }),
      ]);
    });
    callEnds.add(ending);
    void ending.finally(() => {
      callEnds.delete(ending);
      reporter.forgetCall(call.callId);
    });
    // Once answered, the call workflow runs the script's speech on this instance's queue. The
    // recording starts when the service has taken the call (its answer names the team, which
    // keys the recording); nothing is said before that.
    void reporter.report(call.callId, { type: 'answered', event_id: `media-edge-answered-${call.callId}`, media_task_queue: taskQueue }).then(({ accepted, teamId, endedAs }) => {
      if (!accepted || !teamId) {
        log.warn({ endedAs }, 'the service did not take the call: hanging up');
        // cancel-call came first and this edge still screens the answer: the dial ends cancelled.
        if (!phoneDialer?.cancelledByService(call.callId, endedAs)) void call.hangUp();
        return;
      }
      if (calls.get(call.callId)) recorder = CallRecorder.start(call.channel, { store: recordings, key: recordingKey(teamId, call.callId) });
    });
  };

  const trunkSettings = options.trunk === undefined ? parseTrunkSettings() : (options.trunk ?? undefined);
  const connection = await NativeConnection.connect({ address: options.temporalAddress });
  let server: MediaEdge | undefined;
  let worker: Worker | undefined;
  let running: Promise<void> | undefined;
  let trunkAgent: SipTrunkAgent | undefined;
  let dialWorker: Worker | undefined;
  let dialing: Promise<void> | undefined;
  let phoneDialer: PhoneDialer | undefined;
  try {
    worker = await Worker.create({
      connection,
      namespace: options.temporalNamespace,
      taskQueue,
      activities: {
        ...createMediaEdgeActivities({ calls, logger, transfers, converse: { llm: options.llm, checkArguments: checkToolArguments, earlyTurns } }),
        // cancel-call while this edge dials a call, ringing or screening its answer (phoneDialer.ts); without a trunk, a plain hang-up.
        cancelDial: async ({ callId }: { callId: string }) => (phoneDialer ? phoneDialer.cancelDial(callId) : calls.get(callId)?.hangUp()),
      },
      ...tracedWorkerOptions(),
      // Each call runs one speech activity at a time; the cap keeps a burst from starving the media loop.
      maxConcurrentActivityTaskExecutions: 200,
    });
    running = worker.run();
    if (trunkSettings) {
      // Phone calls (docs/telephony.md, "Outbound calls"): this edge takes dials from the shared queue.
      const agent = await SipTrunkAgent.start({ settings: trunkSettings, logger: logger.child({ component: 'sip-trunk' }), ...(options.trunkTimers ? { timers: options.trunkTimers } : {}) });
      trunkAgent = agent;
      const openRtp = () => openRtpSession({ portRange: trunkSettings.rtpPortRange, bindAddress: trunkSettings.listen.host, inactivityMs: options.rtpInactivityMs ?? config.RTP_INACTIVITY_SECONDS * 1000, logger, ...(options.rtpClock ? { clock: options.rtpClock } : {}) });
      // A transfer's bridge dials the person through the same trunk, on an RTP port of its own.
      transfers.useTrunk({ trunk: agent, openRtp, publicAddress: trunkSettings.publicAddress.host });
      const dialer = (phoneDialer = new PhoneDialer({
        trunk: agent,
        openRtp,
        publicAddress: trunkSettings.publicAddress.host,
        reporter,
        calls,
        taskQueue,
        onCall,
        logger: logger.child({ component: 'phone-dialer' }),
      }));
      dialWorker = await Worker.create({
        connection,
        namespace: options.temporalNamespace,
        taskQueue: MEDIA_EDGE_DIAL_TASK_QUEUE,
        activities: dialer.activities(),
        ...tracedWorkerOptions(),
        maxConcurrentActivityTaskExecutions: 100,
      });
      dialing = dialWorker.run();
      // Incoming calls (docs/telephony.md, "Inbound calls"): the service decides, this edge answers.
      answerInboundCalls(agent, {
        apiUrl: config.API_URL,
        secret: config.MEDIA_EDGE_SECRET,
        openRtp,
        publicAddress: trunkSettings.publicAddress.host,
        reporter,
        onCall,
        logger: logger.child({ component: 'inbound-calls' }),
      });
    }
    server = await startConfiguredMediaEdge(config, logger, (call) => {
      // A browser call's events join the trace the service answered its admission with (callEvents.ts).
      reporter.joinTrace(call.callId, call.traceparent);
      onCall(call);
    });
  } catch (err) {
    dialWorker?.shutdown();
    await dialing?.catch(() => undefined);
    await trunkAgent?.close();
    worker?.shutdown();
    await running?.catch(() => undefined);
    await connection.close();
    throw err;
  }
  const listening = server;
  const activeWorker = worker;
  logger.info({ url: listening.url, taskQueue, trunk: trunkSettings?.trunk.uri }, 'media edge ready');

  let closing: Promise<void> | undefined;
  return {
    url: listening.url,
    taskQueue,
    calls,
    engines,
    trunkAgent,
    close() {
      closing ??= (async () => {
        // No new dials; the trunk's calls end with BYE, the browsers' with the server
        // (a BYE, then the socket closes; the call ends `dropout`, docs/media-edge.md "Stopping the edge").
        stopWorker(dialWorker);
        await dialing;
        await trunkAgent?.close();
        await listening.close();
        // The calls' ends reach the service, and their activities' failures the workflows,
        // before the speech worker stops: it stops once, after the calls.
        // Bounded: a recording store that does not answer must not hold the process past its grace period.
        const endings = new CallEndings();
        for (const ending of callEnds) endings.add(ending);
        const { unsettled } = await endings.settled(options.closeWaitMs ?? DEFAULT_CALL_ENDINGS_WAIT_MS);
        if (unsettled > 0) logger.warn({ unsettled }, 'edge closing: calls whose end or recording was still being reported are left behind');
        stopWorker(activeWorker);
        await running;
        await connection.close();
        earlyTurns.close();
      })();
      return closing;
    },
  };
}
