// Runs `npm ci` when dependencies are missing, so `npm start` and `npm test` work on a fresh clone.
import { existsSync } from 'node:fs';
import { execSync } from 'node:child_process';

const markers = ['node_modules/koa', 'node_modules/@mikro-orm/core', 'node_modules/tsx', 'node_modules/@usage-monitor/core'];
if (!markers.every((m) => existsSync(m))) {
  console.error('usage-monitor: installing dependencies (npm ci)...');
  execSync('npm ci --no-audit --no-fund', { stdio: 'inherit' });
}
