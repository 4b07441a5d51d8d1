// Whether node_modules still holds what package-lock.json lists. npm's own record of the
// installed tree (node_modules/.package-lock.json) says what was installed, not what is
// still there: a package folder deleted since (by hand, or by a cleaner) leaves it as it
// was. The bootstrap checks the folders too, so such a tree is installed again.
import { existsSync } from 'node:fs';
import path from 'node:path';

/** npm's `os` / `cpu` rule: a list of names, each possibly negated with `!`. */
function allows(list, value) {
  if (!Array.isArray(list) || list.length === 0) return true;
  if (list.includes(`!${value}`)) return false;
  const allowed = list.filter((name) => !name.startsWith('!'));
  return allowed.length === 0 || allowed.includes(value);
}

/**
 * The lock's packages (`node_modules/...` keys) whose folder under `root` has no
 * package.json. Optional ones, those for other platforms and links are not expected.
 */
export function missingLockedPackages(root, lockText, platform = process.platform, arch = process.arch) {
  const packages = JSON.parse(lockText).packages ?? {};
  const missing = [];
  for (const [key, entry] of Object.entries(packages)) {
    if (!key.startsWith('node_modules/') || entry.optional || entry.link) continue;
    if (!allows(entry.os, platform) || !allows(entry.cpu, arch)) continue;
    if (!existsSync(path.join(root, key, 'package.json'))) missing.push(key.slice(key.lastIndexOf('node_modules/') + 'node_modules/'.length));
  }
  return missing;
}
