// The operator CLI (README, "The operator CLI"): `npm run --silent admin -- <command> [options] [--json]`.
// The commands, their parsing and their output are in ./admin.ts.
import { runAdmin } from './admin.js';

runAdmin(process.argv.slice(2), {
  env: process.env,
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
}).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`admin: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(2);
  },
);
