/**
 * One turn of a call as spans (docs/observability.md, "Traces"): `turn` from the end of the
 * caller's speech to the first frame of the agent's reply, with one child per part, end to
 * end: `turn.endpointing` (speech end → the endpointer decides it ended: the hangover),
 * `turn.recognition` (→ the text is known), `turn.workflow_step` (→ the call workflow asked
 * for the reply: the answer's way to the workflow and back) and `turn.synthesis` (→ the
 * reply's first frame left). The spans are made when the turn is complete, with the times
 * the engine measured, so nothing is timed twice. Through the OpenTelemetry API: without
 * tracing (no provider installed) these are its no-op spans.
 */
import { trace, type Context, type Link } from '@opentelemetry/api';

/** The instants of one turn (engine clock: epoch ms). */
export interface TurnInstants {
  /** The caller's last speech frame ended. */
  speechEndedAt: number;
  /** The endpointer decided the utterance had ended. */
  endDetectedAt: number;
  /** The recogniser's text was known. */
  recognisedAt: number;
  /** The agent's reply was asked of the engine (speak or ask). */
  replyRequestedAt: number;
  /** The reply's first frame left. */
  firstFrameAt: number;
}

const PARTS = ['turn.endpointing', 'turn.recognition', 'turn.workflow_step', 'turn.synthesis'] as const;

const tracer = trace.getTracer('voice-agent.media-edge');

/**
 * Records the turn's spans. `heardIn`: the context the answer was listened for in (the ask
 * activity's span: the turn's parent); `repliedIn`: the reply's (the next activity's span),
 * linked. `keyed`: the answer was keyed on the keypad (no endpointing or recognition then).
 */
export function recordTurnSpans(turn: TurnInstants, options: { heardIn: Context; repliedIn?: Context; keyed?: boolean }): void {
  // Each part starts where the previous one ended: a reply asked before the text was known counts no negative step.
  const instants = [turn.speechEndedAt, turn.endDetectedAt, turn.recognisedAt, turn.replyRequestedAt, turn.firstFrameAt];
  for (let i = 1; i < instants.length; i++) instants[i] = Math.max(instants[i], instants[i - 1]);
  const replySpan = options.repliedIn && trace.getSpanContext(options.repliedIn);
  const links: Link[] = replySpan ? [{ context: replySpan }] : [];
  const span = tracer.startSpan(
    'turn',
    { startTime: instants[0], links, attributes: { 'turn.ms': instants[4] - instants[0], 'turn.keyed': options.keyed ?? false } },
    options.heardIn,
  );
  const within = trace.setSpan(options.heardIn, span);
  PARTS.forEach((name, i) => tracer.startSpan(name, { startTime: instants[i] }, within).end(instants[i + 1]));
  span.end(instants[4]);
}
