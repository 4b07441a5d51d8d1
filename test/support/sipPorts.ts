// SIP listening ports for tests. A port from `freePort()` is free on TCP at that moment, but a
// SIP agent also binds UDP, and the OS hands out ports from the same range (32768–60999) in
// which the tests' RTP sessions bind their fixed ranges (40000–45999, the trunk's default
// 40000–40999 among them) at any moment in another lane. So a SIP port is taken outside those
// ranges and checked on UDP too.
import { createSocket } from 'node:dgram';
import { freePort } from '../../src/localPorts.js';

/** Every fixed RTP range a test file or the trunk's default uses lies inside this one. */
export const TEST_RTP_PORTS = { min: 40000, max: 45999 } as const;

function udpFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createSocket('udp4');
    probe.once('error', () => resolve(false));
    probe.bind(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

/** A port free on TCP and UDP, with the next one free on UDP too (baresip's TLS listener), outside TEST_RTP_PORTS. */
export async function freeSipPort(): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const port = await freePort();
    if (port >= 65535 || (port >= TEST_RTP_PORTS.min && port <= TEST_RTP_PORTS.max + 1)) continue;
    if ((await udpFree(port)) && (await udpFree(port + 1))) return port;
  }
  throw new Error('no free SIP port found');
}
