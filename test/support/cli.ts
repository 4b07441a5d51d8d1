// The operator CLI run the way an operator runs it: src/cli/main.ts in a tsx child process in
// the project folder, LOG_LEVEL=warn; or, with { inProcess: true }, the same runAdmin
// (src/cli/admin.ts) called in the test's own process with the same arguments and
// environment, its output collected: the same parsing, commands, output and exit codes
// without a process start (3–5 s each on this machine). Tests of the CLI's commands run it
// in-process; a few (test/cli/admin.test.ts, hookSecrets, npmStartDefaults) keep the child
// process, so the entry point itself stays tested.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { runAdmin } from '../../src/cli/admin.js';
import { PROJECT_ROOT } from '../../src/config/index.js';

export interface AdminRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

const TSX = path.join(PROJECT_ROOT, 'node_modules', '.bin', 'tsx');

/**
 * `admin(args)` runs the CLI and collects its exit code and output; `adminJson(args)` runs it
 * with --json and returns the one line of JSON it must print; `adminFails(args, message)`
 * checks that it exits 1 with `message` on stderr. `extraEnv`, read at each run, adds to
 * the child's environment.
 */
export function operatorCli(extraEnv: () => Record<string, string> = () => ({}), opts: { inProcess?: boolean } = {}) {
  async function admin(args: string[]): Promise<AdminRun> {
    if (opts.inProcess) {
      let stdout = '';
      let stderr = '';
      const env = { ...process.env, LOG_LEVEL: 'warn', ...extraEnv() };
      const code = await runAdmin(args, { env, stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
      return { code, stdout, stderr };
    }
    return new Promise((resolve, reject) => {
      const child = spawn(TSX, ['src/cli/main.ts', ...args], { cwd: PROJECT_ROOT, env: { ...process.env, LOG_LEVEL: 'warn', ...extraEnv() } });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
  }

  async function adminJson(args: string[]): Promise<any> {
    const run = await admin([...args, '--json']);
    assert.equal(run.code, 0, `admin ${args.join(' ')} failed: ${run.stderr}`);
    const lines = run.stdout.trim().split('\n');
    assert.equal(lines.length, 1, `exactly one line of JSON on stdout, got: ${run.stdout}`);
    return JSON.parse(lines[0]);
  }

  async function adminFails(args: string[], message: RegExp): Promise<void> {
    const run = await admin(args);
    assert.equal(run.code, 1, `admin ${args.join(' ')} should fail: ${run.stdout}`);
    assert.match(run.stderr, message);
  }

  return { admin, adminJson, adminFails };
}
