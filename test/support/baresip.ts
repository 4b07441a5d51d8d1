// baresip (Debian's baresip-core) as a real telephone for SIP tests, on loopback
// (/work/shared/recipes/sip-test-phones.md has the facts this builds on):
//
//   const phone = await BaresipPhone.start({ accounts: [{ number: '+15551234567', answer: 'auto' }] });
//   phone.uri('+15551234567')                     // sip:+15551234567@127.0.0.1:<port>: dial it
//   await phone.waitForEvent('CALL_ESTABLISHED')  // ctrl_tcp's JSON events, all kept in phone.events
//   await phone.hangup('+15551234567')            // the cons module's commands, over UDP
//   await phone.stop()                            // SIGTERM: BYE for a live call, WAV headers finalised
//
// Answer modes per account: 'auto' (180 then 200, plays `audioFile` as its microphone and
// hangs up when it ends), 'manual' (rings until CANCEL, or `accept()`); `busy: true` makes
// the phone answer every call 486 (a contact that blocks everyone). Every call is recorded:
// `recordings()` lists what it heard (-dec.wav) and sent (-enc.wav), 8 kHz mono; names have
// one-second resolution, so run one phone per simultaneous call. A number that has no
// account gets 404. Dial out with `dial(uri)`.
import { spawn, type ChildProcess } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../src/localPorts.js';
import { freeSipPort } from './sipPorts.js';

export interface BaresipAccount {
  /** The number the phone answers as (the Request-URI's user), e.g. +15551234567; also its From when dialling. */
  number: string;
  /** 'auto' answers at once; 'manual' rings until CANCEL or accept() (default 'auto'). */
  answer?: 'auto' | 'manual';
  /** Digest credentials it answers challenges with. */
  auth?: { user: string; password: string };
  /** This account's microphone, instead of the phone's `audioFile` (baresip's per-account audio_source). */
  audioFile?: string;
}

export interface BaresipPhoneOptions {
  accounts: BaresipAccount[];
  /** Answer every incoming call 486 Busy Here. */
  busy?: boolean;
  /** Answer 486 Busy Here to calls from these SIP URIs only (each `sip:<number>@<host>`, as the caller's From names it). */
  busyFor?: string[];
  /** Its microphone: a WAV of 8 kHz mono 16-bit PCM (default: 60 s of silence, made with sox). */
  audioFile?: string;
  /** Its SIP port (default: a free one; it also takes the port above it). */
  sipPort?: number;
}

/** One ctrl_tcp event, e.g. { type: 'CALL_ESTABLISHED', direction: 'incoming', peeruri, id, param }. */
export interface BaresipEvent {
  type: string;
  class?: string;
  accountaor?: string;
  direction?: 'incoming' | 'outgoing';
  peeruri?: string;
  id?: string;
  param?: string;
  [key: string]: unknown;
}

export class BaresipPhone {
  /** Every ctrl_tcp event so far, in order. */
  readonly events: BaresipEvent[] = [];
  /** What baresip printed (stdout and stderr), for failure messages. */
  output = '';
  private readonly waiters = new Set<() => void>();
  private control?: Socket;
  private exited: Promise<number | null>;

  private constructor(
    private readonly child: ChildProcess,
    readonly dir: string,
    readonly sipPort: number,
    private readonly consPort: number,
    private readonly ctrlPort: number,
  ) {
    child.stdout?.on('data', (d: Buffer) => (this.output += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (this.output += d.toString()));
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }

  get recordingsDir(): string {
    return path.join(this.dir, 'recordings');
  }

  static async start(options: BaresipPhoneOptions): Promise<BaresipPhone> {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'baresip-'));
    mkdirSync(path.join(dir, 'recordings'));
    let audioFile = options.audioFile;
    if (!audioFile) {
      audioFile = path.join(dir, 'silence.wav');
      // spawns: sox
      await run('sox', ['-n', '-r', '8000', '-c', '1', '-b', '16', '-e', 'signed-integer', audioFile, 'trim', '0', '60']);
    }
    const sipPort = options.sipPort ?? (await freeSipPort());
    const consPort = await freePort();
    const ctrlPort = await freePort();
    const rtpBase = 20000 + 2 * Math.floor(Math.random() * 4000);
    writeFileSync(
      path.join(dir, 'config'),
      [
        'poll_method epoll',
        `sip_listen 127.0.0.1:${sipPort}`,
        'net_interface 127.0.0.1',
        'call_max_calls 4',
        `audio_source aufile,${audioFile}`,
        `rtp_ports ${rtpBase}-${rtpBase + 99}`,
        'module_path /usr/lib/baresip/modules',
        'module g711.so',
        'module aufile.so',
        'module sndfile.so',
        'module cons.so',
        'module_tmp account.so',
        'module_app contact.so',
        'module_app menu.so',
        'module_app ctrl_tcp.so',
        `ctrl_tcp_listen 127.0.0.1:${ctrlPort}`,
        `cons_listen 127.0.0.1:${consPort}`,
        `snd_path ${path.join(dir, 'recordings')}`,
        'statmode_default off',
        '',
      ].join('\n'),
    );
    writeFileSync(
      path.join(dir, 'accounts'),
      options.accounts
        .map(
          (a) =>
            `<sip:${a.number}@127.0.0.1:${sipPort}>;regint=0;answermode=${a.answer ?? 'auto'};audio_codecs=PCMU,PCMA;ptime=20${a.auth ? `;auth_user=${a.auth.user};auth_pass=${a.auth.password}` : ''}${a.audioFile ? `;audio_source=aufile,${a.audioFile}` : ''}\n`,
        )
        .join(''),
    );
    const blocked = options.busy ? ['sip:*@*'] : (options.busyFor ?? []);
    writeFileSync(path.join(dir, 'contacts'), blocked.map((uri, i) => `"Blocked ${i}" <${uri}>;access=block\n`).join(''));
    // spawns: baresip
    const child = spawn('baresip', ['-f', dir], { stdio: ['ignore', 'pipe', 'pipe'] });
    const phone = new BaresipPhone(child, dir, sipPort, consPort, ctrlPort);
    await phone.connectControl();
    return phone;
  }

  /** The URI that reaches `number` on this phone. */
  uri(number: string): string {
    return `sip:${number}@127.0.0.1:${this.sipPort}`;
  }

  /** The first event (already seen or still to come) of `type` that `match` accepts; rejects after `timeoutMs`. */
  waitForEvent(type: string, match: (event: BaresipEvent) => boolean = () => true, timeoutMs = 15_000): Promise<BaresipEvent> {
    const find = () => this.events.find((e) => e.type === type && match(e));
    const seen = find();
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const check = () => {
        const event = find();
        if (!event) return;
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve(event);
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`baresip: no ${type} event in ${timeoutMs} ms; events: ${this.events.map((e) => e.type).join(', ')}\n${this.output.slice(-2000)}`));
      }, timeoutMs);
      this.waiters.add(check);
    });
  }

  /** A console command (`/dial …`, `/accept`, `/hangup`, `/sndcode 123#`) over the cons module's UDP port. */
  command(text: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const socket = createSocket('udp4');
      socket.send(`${text}\n`, this.consPort, '127.0.0.1', (err) => {
        socket.close();
        if (err) reject(err);
        else resolve();
      });
    });
  }

  /**
   * Makes `number`'s account the current one (`/uafind`): dial, accept and hangup act on the
   * current account's call, which is the account of the last incoming call.
   */
  async select(number: string): Promise<void> {
    await this.command(`/uafind ${this.uri(number)}`);
  }

  /** Dials `uri`, from `fromNumber`'s account when given (else the current one). */
  async dial(uri: string, fromNumber?: string): Promise<void> {
    if (fromNumber) await this.select(fromNumber);
    await this.command(`/dial ${uri}`);
  }

  /** Answers the ringing call of `number`'s account (else of the current one). */
  async accept(number?: string): Promise<void> {
    if (number) await this.select(number);
    await this.command('/accept');
  }

  /** Hangs up the call of `number`'s account (else of the current one). */
  async hangup(number?: string): Promise<void> {
    if (number) await this.select(number);
    await this.command('/hangup');
  }

  /** Stops the process (SIGSTOP): its RTP and SIP fall silent, as a phone whose line died. */
  freeze(): void {
    this.child.kill('SIGSTOP');
  }

  /** Lets a frozen phone run again (SIGCONT). */
  thaw(): void {
    this.child.kill('SIGCONT');
  }

  /** The WAVs of its calls so far: what it heard (dec) and what it sent (enc). */
  recordings(): { heard: string[]; sent: string[] } {
    const files = readdirSync(this.recordingsDir).sort();
    return {
      heard: files.filter((f) => f.endsWith('-dec.wav')).map((f) => path.join(this.recordingsDir, f)),
      sent: files.filter((f) => f.endsWith('-enc.wav')).map((f) => path.join(this.recordingsDir, f)),
    };
  }

  /** SIGTERM (a live call gets its BYE, recordings are finalised), then the config folder is removed unless `keep`. */
  async stop(keep = false): Promise<void> {
    this.control?.destroy();
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill('SIGTERM');
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 5000);
      await this.exited;
      clearTimeout(timer);
    }
    if (!keep) rmSync(this.dir, { recursive: true, force: true });
  }

  /** ctrl_tcp speaks netstrings (`<length>:<json>,`); connecting also says baresip is up. */
  private async connectControl(): Promise<void> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (this.child.exitCode !== null) throw new Error(`baresip exited at start-up (${this.child.exitCode}):\n${this.output}`);
      const socket = await new Promise<Socket | undefined>((resolve) => {
        const s = connect({ host: '127.0.0.1', port: this.ctrlPort });
        s.once('connect', () => resolve(s));
        s.once('error', () => resolve(undefined));
      });
      if (socket) {
        this.control = socket;
        break;
      }
      if (Date.now() > deadline) throw new Error(`baresip's ctrl_tcp never listened:\n${this.output}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    let buffer = Buffer.alloc(0);
    this.control.on('error', () => undefined);
    this.control.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        const colon = buffer.indexOf(0x3a);
        if (colon === -1) return;
        const length = Number(buffer.subarray(0, colon).toString());
        if (buffer.length < colon + 1 + length + 1) return;
        const json = buffer.subarray(colon + 1, colon + 1 + length).toString();
        buffer = buffer.subarray(colon + 1 + length + 1);
        try {
          const parsed = JSON.parse(json) as BaresipEvent & { event?: boolean };
          if (parsed.event) this.events.push(parsed);
        } catch {
          // a response to a command sent over ctrl_tcp: not used here
        }
        for (const waiter of [...this.waiters]) waiter();
      }
    });
  }
}

function run(command: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    // spawns: sox
    const child = spawn(command, args, { stdio: 'ignore' });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${command} exited ${code}`))));
  });
}
