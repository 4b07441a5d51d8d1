/**
 * The offline engines are programs (festival, espeak-ng, pocketsphinx_continuous): finding
 * them, and stopping them for sure so that no engine outlives its call.
 */
import type { ChildProcess } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import path from 'node:path';

/** The absolute path of an executable: `name` itself when it has a slash, else found on PATH or in /usr/bin; undefined when absent. */
export function findExecutable(name: string): string | undefined {
  const candidates = name.includes('/')
    ? [name]
    : (process.env.PATH ?? '')
        .split(path.delimiter)
        .filter(Boolean)
        .concat(['/usr/bin', '/usr/local/bin'])
        .map((dir) => path.join(dir, name));
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK);
      return path.resolve(candidate);
    } catch {
      // not this one
    }
  }
  return undefined;
}

/** True once the child has exited or was killed by a signal. */
export function hasExited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

/**
 * Ends a child: SIGTERM, then SIGKILL after `graceMs`; resolves once it has exited. With
 * `group`, the signals go to the child's process group (a child spawned `detached` that
 * started helpers of its own).
 */
export async function stopProcess(child: ChildProcess, graceMs = 1_000, options: { group?: boolean } = {}): Promise<void> {
  if (hasExited(child) || child.pid === undefined) return;
  const pid = child.pid;
  const signal = (name: NodeJS.Signals) => {
    try {
      if (options.group) process.kill(-pid, name);
      else child.kill(name);
    } catch {
      // already gone
    }
  };
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  signal('SIGTERM');
  const timer = setTimeout(() => signal('SIGKILL'), graceMs);
  try {
    await exited;
  } finally {
    clearTimeout(timer);
  }
}
