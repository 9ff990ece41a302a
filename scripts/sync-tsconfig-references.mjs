// Writes the solution tsconfig.json's "references" from the workspace folders that have a
// tsconfig.json, so adding a plugin never means editing a central list by hand.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const order = ['core', 'plugins', 'examples', 'server', 'sdk'];
const refs = [];
for (const entry of order) {
  const dir = join(root, entry);
  if (existsSync(join(dir, 'tsconfig.json'))) refs.push(entry);
  else if (existsSync(dir)) {
    for (const name of readdirSync(dir).sort()) if (existsSync(join(dir, name, 'tsconfig.json'))) refs.push(`${entry}/${name}`);
  }
}
const file = join(root, 'tsconfig.json');
const next = `${JSON.stringify({ files: [], references: refs.map((path) => ({ path })) }, null, 2)}\n`;
if (!existsSync(file) || readFileSync(file, 'utf8') !== next) writeFileSync(file, next);
