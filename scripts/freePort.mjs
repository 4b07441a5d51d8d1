// A TCP port on 127.0.0.1 that is free right now. Plain Node: the scripts that use it run
// before node_modules exist (src/localPorts.ts is the TypeScript twin for the app).
import net from 'node:net';

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}
