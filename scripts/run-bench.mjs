// Builds, then runs every test/bench/*.bench.ts (or those matching the arguments) one after another.
import { readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';

const root = new URL('..', import.meta.url).pathname;
const filters = process.argv.slice(2);
const build = spawnSync('npm', ['run', 'build'], { stdio: 'inherit', cwd: root });
if (build.status !== 0) process.exit(build.status ?? 1);
const files = readdirSync(`${root}test/bench`)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => filters.length === 0 || filters.some((p) => f.includes(p)))
  .sort();
let failed = 0;
for (const f of files) {
  console.log(`\n# ${f}`);
  const r = spawnSync(process.execPath, ['--conditions=development', '--import', 'tsx', `test/bench/${f}`], { stdio: 'inherit', cwd: root, env: process.env });
  if (r.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
