/**
 * The Python venv of the offline neural speech engines (.tools/speech-venv), which
 * scripts/bootstrap.mjs fills with the pinned packages of scripts/speechPackages.mjs: where
 * its python is, and whether an engine's files are in it (checked at start-up, so a missing
 * engine is named before the first call rather than failing it).
 */
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from '../../config/index.js';

export const SPEECH_VENV_DIR = path.join(PROJECT_ROOT, '.tools', 'speech-venv');

/** The venv's python. */
export function speechVenvPython(venvDir = SPEECH_VENV_DIR): string {
  return path.join(venvDir, 'bin', 'python');
}

/** The venv's site-packages folders (one per python version it was made with). */
function sitePackages(venvDir: string): string[] {
  const lib = path.join(venvDir, 'lib');
  try {
    return readdirSync(lib)
      .filter((name) => name.startsWith('python'))
      .map((name) => path.join(lib, name, 'site-packages'));
  } catch {
    return [];
  }
}

/** The full path of `file` (relative to site-packages) in the venv, or undefined when the venv or the file is missing. */
export function speechVenvFile(file: string, venvDir = SPEECH_VENV_DIR): string | undefined {
  if (!existsSync(speechVenvPython(venvDir))) return undefined;
  return sitePackages(venvDir)
    .map((dir) => path.join(dir, file))
    .find((candidate) => existsSync(candidate));
}
