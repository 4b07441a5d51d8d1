// The SIP parser's cost on hostile input, on the event loop that paces every call's audio:
//   folded   a header folded over N continuation lines (" a", 4 bytes each: 16,000 fill the
//            64 KiB a WebSocket message may hold). Prints the median parse time at N and 2N
//            and their ratio: about 2 when the work is linear. For comparison the same lines
//            joined the former way (the value re-trimmed after each line), which grows ~4×.
//   via      an OPTIONS whose compact `v:` header holds 30,000 entries (60 KB): the bytes of
//            its answer (513, the Vias cut at the cap) against the request's.
//
//   npx tsx bench/sipParse.ts
//
// Knobs (environment): BENCH_LINES (default "2000,4000,8000,16000"), BENCH_RUNS (default 31).
import { createResponse, parseSipMessage, serializeSipMessage, SipParseError } from '../src/mediaEdge/sip/message.js';

const lineCounts = (process.env.BENCH_LINES ?? '2000,4000,8000,16000').split(',').map(Number);
const runs = Number(process.env.BENCH_RUNS ?? 31);

const HEAD = ['OPTIONS sip:a@b SIP/2.0', 'Via: SIP/2.0/WS h;branch=z9hG4bKx', 'From: <sip:a@b>;tag=1', 'To: <sip:c@d>', 'Call-ID: bench', 'CSeq: 1 OPTIONS'];
const folded = (lines: number) => [...HEAD, 'X-Folded: start', ...Array<string>(lines).fill(' a'), '', ''].join('\r\n');

/** The former join: the value appended to and trimmed once per continuation line. */
function joinLineByLine(text: string): string {
  let value = '';
  for (const line of text.split('\r\n')) {
    if (line.startsWith(' ')) value = `${value} ${line.trim()}`.trim();
  }
  return value;
}

function medianMs(fn: () => unknown): number {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = process.hrtime.bigint();
    fn();
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return times.sort((a, b) => a - b)[Math.floor(times.length / 2)];
}

// Warm up (JIT) on every size first, so the first row is not the compiler's.
for (const lines of lineCounts) medianMs(() => parseSipMessage(folded(lines)));

console.log(`folded header, median of ${runs} parses`);
console.log('lines    bytes    parse ms   ratio    line-by-line ms   ratio');
let previous: { parse: number; join: number } | undefined;
for (const lines of lineCounts) {
  const text = folded(lines);
  const parse = medianMs(() => parseSipMessage(text));
  const join = medianMs(() => joinLineByLine(text));
  const ratio = (now: number, before: number | undefined) => (before ? (now / before).toFixed(2) : '-').padStart(5);
  console.log(
    `${String(lines).padStart(5)}  ${String(text.length).padStart(7)}  ${parse.toFixed(3).padStart(9)}  ${ratio(parse, previous?.parse)}  ${join.toFixed(3).padStart(16)}  ${ratio(join, previous?.join)}`,
  );
  previous = { parse, join };
}

const vias = Array.from({ length: 30_000 }, () => 'x').join(',');
const request = [...HEAD.filter((h) => !h.startsWith('Via')), `v: SIP/2.0/WS top;branch=z9hG4bKtop,${vias}`, '', ''].join('\r\n');
try {
  parseSipMessage(request);
  console.log('\n30,000 Via entries: parsed (no cap)');
} catch (err) {
  if (!(err instanceof SipParseError) || !err.request) throw err;
  const answer = serializeSipMessage(createResponse(err.request, err.status, { toTag: 'bench' }));
  console.log(`\n30,000 Via entries: request ${request.length} bytes, answer ${err.status} of ${answer.length} bytes (${(answer.length / request.length).toFixed(3)}×)`);
}
