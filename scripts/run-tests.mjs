// Finds every *.test.ts of the workspace and runs them with node's test runner (tsx loads TypeScript).
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { spawnSync } from 'node:child_process';

const root = new URL('..', import.meta.url).pathname;
const SKIP = new Set(['node_modules', 'dist', '.git', 'bench', 'data', '.tmp']);

function walk(dir, out) {
  for (const name of readdirSync(dir)) {
    if (SKIP.has(name)) continue;
    const full = join(dir, name);
    if (statSync(full).isDirectory()) walk(full, out);
    else if (name.endsWith('.test.ts')) out.push(relative(root, full));
  }
  return out;
}

const filters = process.argv.slice(2);
const files = ['core', 'plugins', 'examples', 'server', 'test', 'sdk']
  .flatMap((d) => {
    try {
      return walk(join(root, d), []);
    } catch {
      return [];
    }
  })
  .filter((f) => filters.length === 0 || filters.some((p) => f.includes(p)))
  .sort();

if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}

const result = spawnSync(
  process.execPath,
  ['--conditions=development', '--import', 'tsx', '--test', '--test-concurrency=2', ...files],
  { stdio: 'inherit', cwd: root, env: { ...process.env, NODE_ENV: 'test' } },
);
process.exit(result.status ?? 1);
