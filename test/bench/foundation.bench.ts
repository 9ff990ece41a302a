/**
 * Issue 2 figures: cold start to first response, idle RSS, and req/s of an authenticated
 * GET /configs with 50 connections next to a bare Koa JSON route measured in the same run.
 * Runs the compiled server (`npm run build` first; `npm run bench` does it).
 */
import crypto from 'node:crypto';
import Koa from 'koa';
import type { AddressInfo } from 'node:net';
import { load, median, report, rssMb, spawnServer, stop, tempDir, waitFor } from './support.js';

const PORT_BASE = 18600;

async function coldStart(run: number): Promise<{ ms: number; rss: number }> {
  const port = PORT_BASE + run;
  const started = performance.now();
  const { child } = spawnServer({ PORT: String(port), HOST: '127.0.0.1', DATA_DIR: tempDir(), AUTO_POLL_ENABLED: 'false' });
  await waitFor(`http://127.0.0.1:${port}/api/v1/auth/status`);
  const ms = performance.now() - started;
  await new Promise((r) => setTimeout(r, 1500)); // let start-up garbage settle before reading idle RSS
  const rss = rssMb(child.pid!);
  await stop(child);
  return { ms, rss };
}

async function main(): Promise<void> {
  const starts = [];
  for (let i = 0; i < 5; i++) starts.push(await coldStart(i));
  report('Cold start and idle memory (SQLite, fresh data dir, 5 runs)', {
    'cold start to first response, median (ms)': Math.round(median(starts.map((s) => s.ms))),
    'cold start, all runs (ms)': starts.map((s) => Math.round(s.ms)).join(', '),
    'idle RSS, median (MB)': median(starts.map((s) => s.rss)),
  });

  // The real server with 50 connections, an admin session and an API token.
  const port = PORT_BASE + 10;
  const base = `http://127.0.0.1:${port}`;
  const { child, output } = spawnServer({ PORT: String(port), HOST: '127.0.0.1', DATA_DIR: tempDir(), AUTO_POLL_ENABLED: 'false', ENCRYPTION_KEY: crypto.randomBytes(32).toString('hex') });
  await waitFor(`${base}/api/v1/auth/status`);
  const code = /setup code: ([A-Z2-9-]+)/.exec(output())?.[1];
  const session = (await (await fetch(`${base}/api/v1/auth/setup`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code, password: 'benchmark password' }) })).json()) as { access_token: string };
  const auth = { authorization: `Bearer ${session.access_token}`, 'content-type': 'application/json' };
  for (let i = 0; i < 50; i++) {
    const res = await fetch(`${base}/api/v1/configs`, { method: 'POST', headers: auth, body: JSON.stringify({ provider: 'openrouter', api_key: `sk-or-v1-bench-${i}-${crypto.randomBytes(8).toString('hex')}`, label: `Key ${i}` }) });
    if (res.status !== 201) throw new Error(`create failed: ${res.status}`);
  }
  const token = (await (await fetch(`${base}/api/v1/api-tokens`, { method: 'POST', headers: auth, body: JSON.stringify({ name: 'bench', scopes: ['configs:read'] }) })).json()) as { token: string };

  // A bare Koa app answering a static JSON body, in a process of its own like the server.
  const bare = new Koa();
  bare.use((ctx) => {
    ctx.body = { ok: true };
  });
  const bareServer = bare.listen(0, '127.0.0.1');
  await new Promise((r) => bareServer.once('listening', r));
  const barePort = (bareServer.address() as AddressInfo).port;

  await load(`${base}/api/v1/configs`, { headers: { authorization: `Bearer ${token.token}` }, durationSec: 2 }); // warm-up
  const bareResult = await load(`http://127.0.0.1:${barePort}/`, { durationSec: 5 });
  const withSession = await load(`${base}/api/v1/configs`, { headers: { authorization: `Bearer ${session.access_token}` }, durationSec: 5 });
  const withToken = await load(`${base}/api/v1/configs`, { headers: { authorization: `Bearer ${token.token}` }, durationSec: 5 });
  bareServer.close();
  await stop(child);

  report('GET /configs with 50 connections vs a bare Koa JSON route (20 connections, 5 s each)', {
    'bare Koa JSON route (req/s)': bareResult.requestsPerSec,
    'GET /configs, admin session (req/s)': `${withSession.requestsPerSec}  (p50 ${withSession.p50} ms, p99 ${withSession.p99} ms, non-2xx ${withSession.non2xx})`,
    'GET /configs, udt_ API token (req/s)': `${withToken.requestsPerSec}  (p50 ${withToken.p50} ms, p99 ${withToken.p99} ms, non-2xx ${withToken.non2xx})`,
    'ratio to bare route (session / token)': `${(withSession.requestsPerSec / bareResult.requestsPerSec).toFixed(2)} / ${(withToken.requestsPerSec / bareResult.requestsPerSec).toFixed(2)}`,
  });
}

await main();
