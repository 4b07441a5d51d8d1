// The chaos run's Node parts compiled once, at the start of the run, to plain JavaScript: each
// entry file with the project's modules it imports in one file (esbuild), the packages left to
// node_modules. A part started again then runs that file with plain `node` instead of going
// through tsx's loader for every module of its graph: about half the CPU of loading it
// (docs/reliability.md, "Restarting fast"). It also keeps the run on the code it started
// with: an edit made in the checkout during the run does not reach a restarted part.
//
// The files are written under the project (.tools/chaos-builds/<name>) so that their imports
// of packages resolve in its node_modules. A module that finds files beside itself
// (migrations, the speech workers' scripts, createRequire) does so through import.meta.url:
// each one's is set to its source file's URL, so those paths are the same as under tsx. An
// entry's own import.meta.url is left alone: it is the compiled file, as `process.argv[1]`
// is when it runs (src/server.ts runs main() only then).
import { mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, type Plugin } from 'esbuild';
import { PROJECT_ROOT } from '../src/config/index.js';

/** How many builds compileParts leaves in .tools/chaos-builds, the new one included. */
export const KEPT_BUILDS = 3;

/** The file in each build naming the process that compiled it, so a run still going keeps its build. */
const OWNER_FILE = 'owner.pid';

export interface CompiledParts {
  /** The compiled file of `entry` (a path relative to the project root, as given). */
  file(entry: string): string;
  remove(): void;
}

/** Every module's import.meta.url, except the entry's, is its source file's. */
function sourceImportMetaUrl(entryPath: string): Plugin {
  return {
    name: 'source-import-meta-url',
    setup(b) {
      b.onLoad({ filter: /\.ts$/ }, (args) => {
        if (args.path === entryPath) return undefined;
        const source = readFileSync(args.path, 'utf8');
        if (!source.includes('import.meta.url')) return undefined;
        return { contents: source.replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href)), loader: 'ts' };
      });
    },
  };
}

/**
 * Compiles each of `entries` (paths relative to `root`, the project's by default) into
 * <root>/.tools/chaos-builds/`name`, then deletes older builds beyond the newest KEPT_BUILDS.
 */
export async function compileParts(entries: string[], name: string, root = PROJECT_ROOT): Promise<CompiledParts> {
  mkdirSync(path.join(root, '.tools', 'chaos-builds'), { recursive: true });
  // The real path: node runs a main module from its real path, and src/server.ts compares that
  // with process.argv[1] (a clone of the project may link .tools from another checkout).
  const buildsDir = realpathSync(path.join(root, '.tools', 'chaos-builds'));
  const outDir = path.join(buildsDir, name);
  mkdirSync(outDir, { recursive: true });
  writeFileSync(path.join(outDir, OWNER_FILE), `${process.pid}\n`);
  const files = new Map<string, string>();
  try {
    for (const entry of entries) {
      const entryPath = path.join(root, entry);
      const outfile = path.join(outDir, entry.replace(/\.ts$/, '.mjs'));
      // One build per entry: a module is an entry in its own file only (its import.meta.url is left alone there).
      await build({
        entryPoints: [entryPath],
        outfile,
        bundle: true,
        platform: 'node',
        format: 'esm',
        target: 'node20',
        packages: 'external',
        logLevel: 'error',
        plugins: [sourceImportMetaUrl(entryPath)],
      });
      files.set(entry, outfile);
    }
  } catch (err) {
    rmSync(outDir, { recursive: true, force: true });
    throw err;
  }
  pruneBuilds(buildsDir, name, KEPT_BUILDS);
  return {
    file(entry) {
      const file = files.get(entry);
      if (!file) throw new Error(`${entry} was not compiled`);
      return file;
    },
    remove: () => rmSync(outDir, { recursive: true, force: true }),
  };
}

function processLives(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it lives, as another user's.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function ownerLives(buildDir: string): boolean {
  let pid: number;
  try {
    pid = Number.parseInt(readFileSync(path.join(buildDir, OWNER_FILE), 'utf8'), 10);
  } catch {
    return false;
  }
  return Number.isInteger(pid) && pid > 0 && processLives(pid);
}

/**
 * Deletes the builds in `buildsDir` older than the newest `keep` (by when they were written),
 * `current` always kept. A run that ends removes its own; this clears those of runs killed
 * before they could. A build whose compiling process still runs is kept whatever its age:
 * several runs (and the tests) share the folder, and a restart reads its run's build.
 */
function pruneBuilds(buildsDir: string, current: string, keep: number): void {
  const others = readdirSync(buildsDir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && entry.name !== current)
    .map((entry) => path.join(buildsDir, entry.name))
    // Another run pruning at the same time may have removed one already.
    .flatMap((dir) => {
      const written = statSync(dir, { throwIfNoEntry: false })?.mtimeMs;
      return written === undefined ? [] : [{ dir, written }];
    })
    .sort((a, b) => b.written - a.written);
  for (const { dir } of others.slice(Math.max(0, keep - 1))) {
    if (!ownerLives(dir)) rmSync(dir, { recursive: true, force: true });
  }
}
