/**
 * Workflow bundles kept on disk, each under the content of every file that went into it.
 *
 * Webpack takes about 15 s of CPU on a busy 2-core machine to bundle the workflows, and every
 * test process that runs a worker (each workflow test file, each worker an e2e test starts)
 * made its own bundle of the same code. With this cache the first process builds it and the
 * others read it: the bundle is looked up by its options (workflows path, interceptor
 * modules, package-lock.json) and used only while every file webpack read for it still has
 * the same content (sha-256) and every path webpack looked for and did not find is still
 * absent, so an edit to any workflow, to a module it imports or to a dependency makes the
 * next process build it again. Processes that want the same missing bundle at once build it
 * once: one holds a lock file, the others wait for its result. Workers keep theirs the same way
 * (WORKFLOW_BUNDLE_CACHE_DIR, worker.ts): a worker started again reads the bundle instead of
 * running webpack again (docs/reliability.md, "Restarting fast").
 */
import { createHash } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode, type BundleOptions, type WorkflowBundle } from '@temporalio/worker';
import { PROJECT_ROOT } from '../config/index.js';

/** Where the test runs keep their bundles (NODE_ENV=test; docs/testing.md). */
export const TEST_WORKFLOW_BUNDLES_DIR = path.join(PROJECT_ROOT, '.tools', 'workflow-bundles');

/** A lock older than this is left by a process that died while building (a build takes under a minute). */
const STALE_LOCK_MS = 5 * 60_000;
const LOCK_POLL_MS = 250;

interface Manifest {
  /** Absolute path → sha-256 of each file webpack read. */
  inputs: Record<string, string>;
  /** Paths webpack looked for and did not find (a new file there could change what is bundled). */
  absent: string[];
  /** sha-256 of the bundle's code, checked when it is read. */
  code: string;
}

type CachedBundleOptions = Pick<BundleOptions, 'workflowsPath' | 'workflowInterceptorModules' | 'logger'>;

const sha256 = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex');

/** The bundle of `options`, from `dir` when what went into it is unchanged, else built and kept there. */
export async function cachedWorkflowBundle(options: CachedBundleOptions, dir: string): Promise<WorkflowBundle> {
  const { code } = await keptOrBuiltWorkflowBundle(options, dir);
  return { code };
}

/** Errors of a cache folder that cannot be made, read or written (the bundle is then built in memory). */
const UNUSABLE_DIR_CODES = new Set(['EACCES', 'EPERM', 'EROFS', 'ENOSPC', 'ENOTDIR', 'EEXIST', 'EISDIR', 'EDQUOT']);

/**
 * keptOrBuiltWorkflowBundle for a worker: a cache folder that cannot be used (read-only, full, a
 * file in the way) must not keep the worker from starting, so the bundle is then built in
 * memory as before (`kept: false`, with the reason). A failing build still fails.
 */
export async function workflowBundleForWorker(options: CachedBundleOptions, dir: string): Promise<{ code: string; built: boolean; kept: true } | { code: string; built: true; kept: false; reason: string }> {
  try {
    return { ...(await keptOrBuiltWorkflowBundle(options, dir)), kept: true };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (typeof code !== 'string' || !UNUSABLE_DIR_CODES.has(code) || typeof (err as NodeJS.ErrnoException).syscall !== 'string') throw err;
    const { code: bundle } = await bundleWorkflowCode(options);
    return { code: bundle, built: true, kept: false, reason: (err as Error).message };
  }
}

/** cachedWorkflowBundle's work, saying whether this call built the bundle. */
export async function keptOrBuiltWorkflowBundle(options: CachedBundleOptions, dir: string): Promise<{ code: string; built: boolean }> {
  mkdirSync(dir, { recursive: true });
  // The installed dependencies' versions (an install without a lock file keys on the files read alone).
  const lockFile = existsSync(path.join(PROJECT_ROOT, 'package-lock.json')) ? readFileSync(path.join(PROJECT_ROOT, 'package-lock.json')) : '';
  const key = sha256(JSON.stringify({ workflowsPath: options.workflowsPath, interceptors: options.workflowInterceptorModules ?? [], lock: sha256(lockFile) })).slice(0, 24);
  const files = { manifest: path.join(dir, `${key}.json`), code: path.join(dir, `${key}.js`), lock: path.join(dir, `${key}.lock`) };

  for (;;) {
    const kept = readKept(files);
    if (kept) return { code: kept, built: false };
    if (takeLock(files.lock)) break;
    await new Promise((resolve) => setTimeout(resolve, LOCK_POLL_MS));
  }
  try {
    // Another process may have finished between the last look and the lock.
    const kept = readKept(files);
    if (kept) return { code: kept, built: false };
    return { code: await buildAndKeep(options, files), built: true };
  } finally {
    rmSync(files.lock, { force: true });
  }
}

/** The kept code, when its manifest's inputs are all unchanged. */
function readKept(files: { manifest: string; code: string }): string | undefined {
  let manifest: Manifest;
  try {
    manifest = JSON.parse(readFileSync(files.manifest, 'utf8')) as Manifest;
  } catch {
    return undefined;
  }
  for (const [file, hash] of Object.entries(manifest.inputs)) {
    try {
      if (sha256(readFileSync(file)) !== hash) return undefined;
    } catch {
      return undefined;
    }
  }
  if (manifest.absent.some((file) => existsSync(file))) return undefined;
  try {
    const code = readFileSync(files.code, 'utf8');
    return sha256(code) === manifest.code ? code : undefined;
  } catch {
    return undefined;
  }
}

/** Creates the lock file; false while another live process holds it. */
function takeLock(lock: string): boolean {
  try {
    const fd = openSync(lock, 'wx');
    writeSync(fd, String(process.pid));
    closeSync(fd);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  if (lockIsStale(lock)) rmSync(lock, { force: true });
  return false;
}

function lockIsStale(lock: string): boolean {
  try {
    if (Date.now() - statSync(lock).mtimeMs > STALE_LOCK_MS) return true;
    const pid = Number(readFileSync(lock, 'utf8'));
    if (!Number.isInteger(pid) || pid <= 0) return false; // being written
    process.kill(pid, 0);
    return false;
  } catch (err) {
    // ESRCH: its process is gone; ENOENT: released meanwhile (taken again on the next look).
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

async function buildAndKeep(options: CachedBundleOptions, files: { manifest: string; code: string }): Promise<string> {
  let read: string[] = [];
  let absent: string[] = [];
  const began = Date.now();
  const bundle = await bundleWorkflowCode({
    ...options,
    webpackConfigHook: (config) => ({
      ...config,
      plugins: [
        ...(config.plugins ?? []),
        {
          apply(compiler) {
            compiler.hooks.done.tap('RecordBundleInputs', (stats) => {
              read = [...stats.compilation.fileDependencies];
              absent = [...stats.compilation.missingDependencies];
            });
          },
        },
      ],
    }),
  });
  // The generated entry file lives in the bundler's memory only; it follows from the options (the key).
  const inputs: Record<string, string> = {};
  for (const file of read) {
    const stat = statSync(file, { throwIfNoEntry: false });
    if (!stat?.isFile()) continue;
    // A file written since the build began may differ from what webpack read, and its hash now
    // would key the bundle to content it does not hold: that bundle is used, not kept.
    if (stat.mtimeMs > began) return bundle.code;
    inputs[file] = sha256(readFileSync(file));
  }
  const manifest: Manifest = { inputs, absent: absent.filter((file) => !existsSync(file)), code: sha256(bundle.code) };
  // Written aside and renamed into place, so a reader never sees half a file; the code before its manifest.
  const suffix = `.${process.pid}.tmp`;
  writeFileSync(files.code + suffix, bundle.code);
  renameSync(files.code + suffix, files.code);
  writeFileSync(files.manifest + suffix, JSON.stringify(manifest));
  renameSync(files.manifest + suffix, files.manifest);
  return bundle.code;
}
