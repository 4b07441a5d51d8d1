// The transport of a vendor's fake that speaks over WebSocket (fakeDeepgram.ts,
// fakeElevenLabs.ts): a loopback HTTP server that only upgrades, whose handshakes the fake
// refuses as the vendor does (an HTTP error with a JSON body) or accepts.
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';

/** Answers one handshake: refuseHandshake(socket, ...) or server.accept(...). */
export type HandshakeHandler = (req: http.IncomingMessage, socket: Socket, head: Buffer) => void;

export class WebSocketFakeServer {
  private readonly wss = new WebSocketServer({ noServer: true });
  private readonly sockets = new Set<Socket>();

  private constructor(private readonly server: http.Server) {}

  /** Listens on a free loopback port; a request that is not an upgrade gets 426. */
  static async listen(onHandshake: HandshakeHandler): Promise<WebSocketFakeServer> {
    const server = http.createServer((_req, res) => {
      res.writeHead(426, { 'content-type': 'text/plain' }).end('Upgrade Required');
    });
    const fake = new WebSocketFakeServer(server);
    server.on('connection', (socket) => {
      fake.sockets.add(socket);
      socket.on('close', () => fake.sockets.delete(socket));
    });
    server.on('upgrade', (req, socket, head) => onHandshake(req, socket as Socket, head));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return fake;
  }

  get baseUrl(): string {
    return `ws://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Completes the handshake; `onOpen` gets the stream. */
  accept(req: http.IncomingMessage, socket: Socket, head: Buffer, onOpen: (ws: WebSocket) => void): void {
    this.wss.handleUpgrade(req, socket, head, onOpen);
  }

  /** Ends every stream and connection, then stops listening. */
  async close(): Promise<void> {
    for (const client of this.wss.clients) client.terminate();
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Refuses a handshake with an HTTP error whose body is JSON; `headers` go before its length. */
export function refuseHandshake(socket: Socket, status: number, reason: string, body: string, headers: Record<string, string> = {}): void {
  const extra = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.end(`HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\n${extra}content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
}
