// An HTTP load generator on its own thread (plain JS, keep-alive HTTP), so that the client's
// work does not share the API's event loop. Each run sends `requests` requests over
// `workerData.concurrency` lanes and reports its wall time and the answers that were not
// the expected status.
import { Worker } from 'node:worker_threads';

export interface LoadThread {
  /** One run: `message` goes to the thread's `request(message)`; `message.requests` requests in all. */
  run(message: { requests: number; [k: string]: unknown }): Promise<{ ms: number; failed: number }>;
  terminate(): Promise<number>;
}

/**
 * `requestSource` is plain JS that defines `request(message)`, sending one request and
 * resolving to its status code. It may use `workerData`, `http`, `agent` and
 * `post(path, headers, body)` (a POST to 127.0.0.1:workerData.port resolving to the status).
 */
export function startLoadThread(requestSource: string, okStatus: number, workerData: { port: number; concurrency: number; [k: string]: unknown }): LoadThread {
  const source = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const agent = new http.Agent({ keepAlive: true, maxSockets: workerData.concurrency });
function post(path, headers, body) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: workerData.port, path, method: 'POST', headers, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', reject);
    req.end(body);
  });
}
${requestSource}
parentPort.on('message', async (message) => {
  let next = 0;
  let failed = 0;
  const started = performance.now();
  async function lane() {
    while (next < message.requests) {
      next++;
      if ((await request(message)) !== ${okStatus}) failed++;
    }
  }
  await Promise.all(Array.from({ length: workerData.concurrency }, lane));
  parentPort.postMessage({ ms: performance.now() - started, failed });
});
`;
  const worker = new Worker(source, { eval: true, workerData });
  return {
    run: (message) =>
      new Promise((resolve) => {
        worker.once('message', resolve);
        worker.postMessage(message);
      }),
    terminate: () => worker.terminate(),
  };
}
