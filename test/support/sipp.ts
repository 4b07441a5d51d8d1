// SIPp (Debian's sip-tester) running one scenario file, on loopback, for SIP tests: a UAS
// that waits for our INVITE (a digest challenge, a carrier's odd answer), or a UAC that
// calls us. One scenario file per case, in test/mediaEdge/sipScenarios/.
//
//   const sipp = await startSipp({ scenario: 'test/mediaEdge/sipScenarios/uas-auth-401.xml', args: ['-au', 'alice', '-ap', 'secret'] });
//   … send an INVITE to 127.0.0.1:sipp.port …
//   const result = await sipp.done   // { code: 0 when every call of the scenario passed, output, errors }
//
// `-m 1` (one call, then exit) is the default; a UAC scenario gets `remote` (host:port) and
// `-s <service>` through `args`. SIPp's own error log (-trace_err) is returned as `errors`.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freeSipPort } from './sipPorts.js';

export interface SippOptions {
  /** The scenario file. */
  scenario: string;
  /** Its SIP port (default: a free one). */
  port?: number;
  /** host:port to call (UAC scenarios). */
  remote?: string;
  /** More arguments: `-au user -ap password` for verifyauth, `-s service`, `-t t1` for TCP. */
  args?: string[];
  /** Calls before it exits (default 1). */
  calls?: number;
  /** SIPp's global timeout (default 30 s): it exits non-zero when the scenario has not ended by then. */
  timeoutSeconds?: number;
}

export interface SippResult {
  /** 0: every call passed; 1: at least one failed; 97/99: SIPp itself failed. */
  code: number | null;
  output: string;
  /** SIPp's error log. */
  errors: string;
}

export interface SippRun {
  readonly port: number;
  readonly done: Promise<SippResult>;
  /** SIGTERM; resolves with its result. */
  stop(): Promise<SippResult>;
}

/** Whether a UDP socket is bound to `port` (read from /proc, so probing never races SIPp for the port). */
function udpPortTaken(port: number): Promise<boolean> {
  const hex = `:${port.toString(16).toUpperCase().padStart(4, '0')} `;
  return Promise.resolve(
    ['/proc/net/udp', '/proc/net/udp6'].some((file) => {
      try {
        return readFileSync(file, 'utf8')
          .split('\n')
          .some((line) => line.trim().split(/\s+/)[1]?.endsWith(hex.trim()));
      } catch {
        return false;
      }
    }),
  );
}

/** Starts SIPp on a scenario; resolves once it listens on its port. */
export async function startSipp(options: SippOptions): Promise<SippRun> {
  const port = options.port ?? (await freeSipPort());
  const mediaPort = await freeSipPort();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sipp-'));
  const errorFile = path.join(dir, 'errors.log');
  const args = [
    '-sf',
    path.resolve(options.scenario),
    ...(options.remote ? [options.remote] : []),
    '-i',
    '127.0.0.1',
    '-p',
    String(port),
    '-mp',
    String(mediaPort),
    '-m',
    String(options.calls ?? 1),
    '-nostdin',
    '-timeout',
    `${options.timeoutSeconds ?? 30}s`,
    '-timeout_error',
    '-trace_err',
    '-error_file',
    errorFile,
    ...(options.args ?? []),
  ];
  // spawns: sipp
  const child = spawn('sipp', args, { stdio: ['ignore', 'pipe', 'pipe'], cwd: dir });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-20_000)));
  child.stderr.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-20_000)));
  const done = new Promise<SippResult>((resolve) => {
    child.once('exit', (code) => {
      let errors = '';
      try {
        errors = readFileSync(errorFile, 'utf8');
      } catch {
        // no errors logged
      }
      rmSync(dir, { recursive: true, force: true });
      resolve({ code, output, errors });
    });
  });
  const deadline = Date.now() + 10_000;
  while (!(await udpPortTaken(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGTERM');
      const result = await done;
      throw new Error(`SIPp did not start (exit ${result.code}):\n${result.output}\n${result.errors}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    port,
    done,
    stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return done;
    },
  };
}
