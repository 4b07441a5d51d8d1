// CPU time of whole process trees from /proc (Linux), for benchmarks that run the service
// as separate processes: a postmaster and its backends, a Node process, the Temporal dev
// server. A tree's time is every live member's user + system time plus what its exited
// children left in their parent's cutime / cstime, so backends that come and go between
// two readings are counted once.
import { readdirSync, readFileSync } from 'node:fs';

// /proc reports times in USER_HZ ticks (sysconf(_SC_CLK_TCK)), which Linux fixes at 100 on
// x86 and ARM whatever the kernel's own HZ; read as a constant, so no program is spawned.
export const TICKS_PER_SECOND = 100;

export interface ProcStat {
  pid: number;
  ppid: number;
  /** The command name. */
  comm: string;
  /** utime + stime, in ticks. */
  self: number;
  /** cutime + cstime: what its ended children that it waited for left, in ticks. */
  reaped: number;
  /** self + reaped. */
  ticks: number;
}

function readStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) may hold spaces and parentheses: fields restart after the last ')'.
  const close = text.lastIndexOf(')');
  const rest = text.slice(close + 2).split(' ');
  const field = (n: number) => Number(rest[n - 3]);
  const self = field(14) + field(15);
  const reaped = field(16) + field(17);
  return { pid, ppid: field(4), comm: text.slice(text.indexOf('(') + 1, close), self, reaped, ticks: self + reaped };
}

/** Every process's /proc/<pid>/stat now, by pid. */
export function processStats(): Map<number, ProcStat> {
  return new Map(allStats().map((s) => [s.pid, s]));
}

function allStats(): ProcStat[] {
  const stats: ProcStat[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = readStat(Number(name));
    if (stat) stats.push(stat);
  }
  return stats;
}

/** CPU seconds of each named process tree right now (0 for a tree whose root is gone). */
export function treeCpuSeconds(roots: Record<string, number>): Record<string, number> {
  const stats = allStats();
  const children = new Map<number, ProcStat[]>();
  for (const s of stats) children.set(s.ppid, [...(children.get(s.ppid) ?? []), s]);
  const byPid = new Map(stats.map((s) => [s.pid, s]));
  const result: Record<string, number> = {};
  for (const [name, root] of Object.entries(roots)) {
    let ticks = 0;
    const queue = byPid.has(root) ? [byPid.get(root)!] : [];
    while (queue.length) {
      const s = queue.pop()!;
      ticks += s.ticks;
      queue.push(...(children.get(s.pid) ?? []));
    }
    result[name] = ticks / TICKS_PER_SECOND;
  }
  return result;
}

/** Busy and total CPU seconds of the whole machine (all CPUs, every process and the kernel), from /proc/stat. */
export function machineCpuSeconds(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0];
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  const idle = v[3] + (v[4] ?? 0);
  const total = v.slice(0, 8).reduce((a, b) => a + b, 0);
  return { busy: (total - idle) / TICKS_PER_SECOND, total: total / TICKS_PER_SECOND };
}

/** The process ids whose parent is `ppid` and whose command name is `comm` (e.g. a server a library spawned). */
export function childrenNamed(ppid: number, comm: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = readStat(Number(name));
    if (stat?.comm === comm && stat.ppid === ppid) found.push(stat.pid);
  }
  return found;
}

/** Resident memory of a process tree in MiB (VmRSS summed over the root and its descendants). */
export function treeRssMiB(root: number): number {
  const kids = new Map<number, number[]>();
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = readStat(Number(name));
    if (!stat) continue;
    pids.push(stat.pid);
    kids.set(stat.ppid, [...(kids.get(stat.ppid) ?? []), stat.pid]);
  }
  let kib = 0;
  const queue = pids.includes(root) ? [root] : [];
  while (queue.length) {
    const pid = queue.pop()!;
    try {
      const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      kib += m ? Number(m[1]) : 0;
    } catch {
      // gone meanwhile
    }
    queue.push(...(kids.get(pid) ?? []));
  }
  return kib / 1024;
}

/**
 * CPU ticks of a bench's service, by part: this process and its descendants, the subtree of
 * `exclude` (the callers' process) left out. This process's own time is the Node parts (API,
 * worker, edge); what its ended children left (`reaped`) is the pocketsphinx runs (with their
 * sh and cat); each live child's subtree is named by its command.
 */
export function serviceTicksByPart(exclude: number | undefined): Record<string, number> {
  const procs = processStats();
  const children = new Map<number, number[]>();
  for (const p of procs.values()) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p.pid]);
  const parts: Record<string, number> = {};
  const add = (part: string, ticks: number) => (parts[part] = (parts[part] ?? 0) + ticks);
  const root = procs.get(process.pid)!;
  add('node (API, worker, edge)', root.self);
  add('pocketsphinx (ended runs)', root.reaped);
  const visit = (pid: number, part: string) => {
    const p = procs.get(pid)!;
    add(part, p.self + p.reaped);
    for (const child of children.get(pid) ?? []) visit(child, part);
  };
  for (const pid of children.get(process.pid) ?? []) {
    if (pid === exclude) continue;
    const comm = procs.get(pid)!.comm;
    const part = /temporal/.test(comm) ? 'Temporal dev server' : /postgres|su$/.test(comm) ? 'Postgres' : /festival/.test(comm) ? 'festival' : /python/.test(comm) ? 'python (warm pocketsphinx decoders, Whisper, Piper)' : /sh|pocketsphinx|cat/.test(comm) ? 'pocketsphinx (running)' : comm;
    visit(pid, part);
  }
  return parts;
}
