// SIP listening ports for tests. A port from `freePort()` comes from the OS's ephemeral range
// (32768–60999), which every outgoing connection of every lane also draws from at any moment,
// and in which the tests' RTP sessions bind their fixed ranges (40000–45999, the trunk's
// default 40000–40999 among them). A SIP agent binds its port on UDP and TCP, and baresip its
// TLS listener on the port above: a port checked free there can be taken before the agent
// binds it (a CI run: "tcp: sock_bind: Address already in use" on baresip's TLS port). So SIP
// ports are drawn just below the ephemeral range and above the RTP ports the test phones and
// the RTP tests draw at random (20000–29999), where only another test's own choice could land,
// and checked free on both transports, the port above too.
import { createSocket } from 'node:dgram';
import net from 'node:net';

/** Where SIP test ports are drawn: below the OS's ephemeral ports, above the tests' random RTP ports. */
export const TEST_SIP_PORTS = { min: 30000, max: 32700 } as const;

function udpFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createSocket('udp4');
    probe.once('error', () => resolve(false));
    probe.bind(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

function tcpFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

/** A port free on TCP and UDP, with the one above it free on both too (baresip's TLS listener), inside TEST_SIP_PORTS. */
export async function freeSipPort(): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const port = TEST_SIP_PORTS.min + 2 * Math.floor((Math.random() * (TEST_SIP_PORTS.max - TEST_SIP_PORTS.min)) / 2);
    if ((await tcpFree(port)) && (await udpFree(port)) && (await tcpFree(port + 1)) && (await udpFree(port + 1))) return port;
  }
  throw new Error('no free SIP port found');
}
