/**
 * The media edge's metrics (docs/observability.md), served by the edge process's /metrics.
 * Gauges read the live objects when scraped (LiveSources); counters are counted where the
 * event happens.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { LiveSources, sumOfSources } from './liveSources.js';

export const edgeRegistry = new Registry();
const registers = [edgeRegistry];

/** Each edge's calls held now (LiveCalls). */
export const liveCallSets = new LiveSources<{ readonly size: number }>();
/** Each edge server's open WebSockets. */
export const socketServers = new LiveSources<{ readonly connections: number }>();
/** Sentences waiting for the shared Festival or Piper process. */
export const synthesisQueues = new LiveSources<{ readonly queued: number }>();
/** Utterances waiting for a recogniser process (pocketsphinx slots, Whisper workers). */
export const recognitionQueues = new LiveSources<{ readonly queued: number }>();

export const activeCalls = new Gauge({
  name: 'voice_agent_media_edge_active_calls',
  help: 'Calls whose media this edge holds now (browser and phone).',
  registers,
  collect: sumOfSources(liveCallSets, (calls) => [[{}, calls.size]]),
});

export const openSockets = new Gauge({
  name: 'voice_agent_media_edge_sockets',
  help: 'SIP-over-WebSocket connections open on this edge.',
  registers,
  collect: sumOfSources(socketServers, (server) => [[{}, server.connections]]),
});

export const turnLatency = new Histogram({
  name: 'voice_agent_turn_latency_seconds',
  help: "Caller's speech end to the first frame of the agent's next audio, per turn.",
  buckets: [0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10],
  registers,
});

export const jitterUnderruns = new Counter({
  name: 'voice_agent_jitter_buffer_underruns_total',
  help: 'Inbound audio frames played as silence with nothing buffered (the far end late or not sending).',
  registers,
});

export const jitterLateFrames = new Counter({
  name: 'voice_agent_jitter_buffer_late_frames_total',
  help: 'Inbound audio packets dropped because their play-out time had passed.',
  registers,
});

export const speechEngineErrors = new Counter({
  name: 'voice_agent_speech_engine_errors_total',
  help: 'Speech engines given up for a call after their retries (the offline engine took over), by stage and the engine that failed.',
  labelNames: ['stage', 'engine'] as const,
  registers,
});

export const speechQueueDepth = new Gauge({
  name: 'voice_agent_speech_queue_depth',
  help: 'Speech work waiting for a shared engine, by stage: sentences for Festival/Piper (synthesis), utterances for a recogniser process (recognition).',
  labelNames: ['stage'] as const,
  registers,
  collect(this: Gauge<'stage'>) {
    this.reset();
    for (const [stage, queues] of [['synthesis', synthesisQueues], ['recognition', recognitionQueues]] as const) {
      let queued = 0;
      for (const queue of queues.live()) queued += queue.queued;
      this.set({ stage }, queued);
    }
  },
});

/**
 * Why an INVITE or a WebSocket was refused: socket_limit (the socket caps), caller_limit
 * (the per-address admission limits), or the service's answer: invalid_token (403),
 * not_found (404), already_connected (409), expired (410), error (500), service_unavailable (503).
 */
export const admissionRefusals = new Counter({
  name: 'voice_agent_media_edge_admission_refusals_total',
  help: 'WebSockets and INVITEs the edge refused, by reason.',
  labelNames: ['reason'] as const,
  registers,
});

const REFUSAL_REASON_OF_STATUS: Record<number, string> = {
  403: 'invalid_token',
  404: 'not_found',
  409: 'already_connected',
  410: 'expired',
  500: 'error',
  503: 'service_unavailable',
};

/** The bounded reason label of a refused admission's SIP status. */
export function refusalReason(status: number): string {
  return REFUSAL_REASON_OF_STATUS[status] ?? 'other';
}

export const recordingUploadFailures = new Counter({
  name: 'voice_agent_recording_upload_failures_total',
  help: 'Recording uploads that failed, by result: retried (another attempt follows) or lost (given up, the spool deleted).',
  labelNames: ['result'] as const,
  registers,
});
