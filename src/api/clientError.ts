import type { Duplex } from 'node:stream';

const ANSWERS: Record<string, [status: number, reason: string, message: string]> = {
  HPE_HEADER_OVERFLOW: [431, 'Request Header Fields Too Large', 'Request headers exceed the server limit'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout', 'Request timed out'],
};
const MALFORMED: [number, string, string] = [400, 'Bad Request', 'Malformed HTTP request'];

/**
 * The server's 'clientError' listener: what Node's HTTP parser refuses before Koa sees a
 * request (headers over Node's max header size, malformed HTTP) is answered in the API's
 * JSON shape with Node's own status codes, then the connection is closed.
 */
export function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  // A response already under way on this connection cannot be followed by another one.
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const [status, reason, message] = ANSWERS[err.code ?? ''] ?? MALFORMED;
  const body = JSON.stringify({ success: false, message });
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
