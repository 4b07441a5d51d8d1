/**
 * RTP ports out of RTP_PORT_RANGE: one UDP socket per call on an even port (RFC 3550 §11: the
 * odd port above is RTCP's, left free though this edge sends none), handed out round-robin so a
 * port just released is not reused at once (late packets of the old call would land in the new
 * one). A port some other program holds is skipped. When every even port is taken the call
 * gets a clear error, not a socket on a random port a firewall would block.
 */
import { createSocket, type Socket } from 'node:dgram';
import { lookup as dnsLookup, type LookupOneOptions } from 'node:dns';
import { isIP } from 'node:net';

export interface PortRange {
  min: number;
  max: number;
}

export class RtpPortsExhaustedError extends Error {
  constructor(readonly range: PortRange) {
    super(`no free RTP port in RTP_PORT_RANGE ${range.min}-${range.max} (every even port is in use)`);
    this.name = 'RtpPortsExhaustedError';
  }
}

export interface BoundPort {
  port: number;
  socket: Socket;
  /** Closes the socket and gives the port back. Idempotent. */
  release(): void;
}

export class RtpPortAllocator {
  private readonly inUse = new Set<number>();
  private readonly ports: number[] = [];
  private cursor = 0;

  constructor(readonly range: PortRange) {
    if (!Number.isInteger(range.min) || !Number.isInteger(range.max) || range.min < 1 || range.max > 65_535 || range.min > range.max) {
      throw new RangeError(`RTP port range ${range.min}-${range.max} is not a range of UDP ports`);
    }
    for (let port = range.min + (range.min % 2); port <= range.max; port += 2) this.ports.push(port);
    if (this.ports.length === 0) throw new RangeError(`RTP port range ${range.min}-${range.max} holds no even port`);
  }

  get used(): number {
    return this.inUse.size;
  }

  /** Binds a UDP socket on the next free even port of the range. */
  async bind(address: string): Promise<BoundPort> {
    for (let tried = 0; tried < this.ports.length; tried++) {
      const port = this.ports[this.cursor];
      this.cursor = (this.cursor + 1) % this.ports.length;
      if (this.inUse.has(port)) continue;
      this.inUse.add(port);
      const socket = await bindSocket(address, port);
      if (!socket) {
        this.inUse.delete(port);
        continue;
      }
      let released = false;
      return {
        port,
        socket,
        release: () => {
          if (released) return;
          released = true;
          socket.close();
          this.inUse.delete(port);
        },
      };
    }
    throw new RtpPortsExhaustedError(this.range);
  }
}

/**
 * How an RTP socket resolves the address it sends to: an IP literal (what SDP's c= line and a
 * latched source hold) at once, anything else by dns.lookup. dgram's default, dns.lookup, defers
 * even a literal to the next tick: once per packet, 50 times a second per call, it was a fifth of
 * the cost of sending one.
 */
export function rtpAddressLookup(hostname: string, options: LookupOneOptions | number, callback: (err: NodeJS.ErrnoException | null, address: string, family: number) => void): void {
  const family = isIP(hostname);
  if (family !== 0) callback(null, hostname, family);
  else dnsLookup(hostname, typeof options === 'number' ? { family: options } : options, callback);
}

/** A socket bound to address:port, or undefined when the port is taken. */
function bindSocket(address: string, port: number): Promise<Socket | undefined> {
  const socket = createSocket({ type: address.includes(':') ? 'udp6' : 'udp4', lookup: rtpAddressLookup });
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      socket.close();
      if (err.code === 'EADDRINUSE' || err.code === 'EACCES') resolve(undefined);
      else reject(err);
    };
    socket.once('error', onError);
    socket.bind(port, address, () => {
      socket.off('error', onError);
      resolve(socket);
    });
  });
}

const allocators = new Map<string, RtpPortAllocator>();

/** The process's allocator for a range: every session over the same range shares it. */
export function portAllocatorFor(range: PortRange): RtpPortAllocator {
  const key = `${range.min}-${range.max}`;
  let allocator = allocators.get(key);
  if (!allocator) {
    allocator = new RtpPortAllocator(range);
    allocators.set(key, allocator);
  }
  return allocator;
}
