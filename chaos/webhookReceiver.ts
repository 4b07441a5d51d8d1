// The chaos run's event-webhook receiver, a process of its own: it answers 200 to each
// delivery, or 500 while told to fail (IPC { failForMs }), and reports every request to the
// run over IPC (the event id, its type and call, the status it answered).
import http from 'node:http';

const port = Number(process.argv[2]);
let failUntil = 0;

process.on('message', (m: { failForMs?: number }) => {
  if (m.failForMs) failUntil = Date.now() + m.failForMs;
});

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    let event: { id?: string; type?: string; data?: { call?: { id?: string; status?: string } } } = {};
    try {
      event = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof event;
    } catch {
      // Counted with an empty id: the run reports it as a delivery it could not read.
    }
    const status = Date.now() < failUntil ? 500 : 200;
    process.send?.({ received: { id: event.id ?? '', type: event.type ?? '', callId: event.data?.call?.id ?? null, callStatus: event.data?.call?.status ?? null, status, at: Date.now() } });
    res.writeHead(status, { 'content-type': 'text/plain' });
    res.end(status === 200 ? 'ok' : 'failing on purpose');
  });
});

server.listen(port, '127.0.0.1', () => process.send?.({ ready: true }));
process.once('SIGTERM', () => server.close(() => process.exit(0)));
