import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

export const START_FLAGS = (JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).scripts.start as string).split(' ').filter((a) => a.startsWith('--'));

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export function tempDir(prefix = 'um-bench-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

export function rssMb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return Math.round((kb / 1024) * 10) / 10;
}

export async function waitFor(url: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const res = await fetch(url);
      if (res.ok) return;
    } catch {
      /* not up yet */
    }
    if (Date.now() > deadline) throw new Error(`${url} did not come up`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Starts the compiled production server (`node server/dist/main.js`) as a child process. */
export function spawnServer(env: Record<string, string>): { child: ChildProcess; output: () => string } {
  let out = '';
  // The same flags as `npm start` (package.json), so the figures describe what users run.
  const child = spawn(process.execPath, [...START_FLAGS, path.join(repoRoot, 'server/dist/main.js')], {
    env: { ...process.env, NODE_ENV: 'production', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  return { child, output: () => out };
}

export async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

export interface LoadResult {
  requestsPerSec: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

export async function load(url: string, opts: { headers?: Record<string, string>; connections?: number; durationSec?: number } = {}): Promise<LoadResult> {
  const r = await autocannon({ url, headers: opts.headers, connections: opts.connections ?? 20, duration: opts.durationSec ?? 5, pipelining: 1 });
  return { requestsPerSec: Math.round(r.requests.average), p50: r.latency.p50, p99: r.latency.p99, errors: r.errors, non2xx: r.non2xx };
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

export function report(title: string, rows: Record<string, unknown>): void {
  console.log(`\n## ${title}`);
  for (const [k, v] of Object.entries(rows)) console.log(`  ${k.padEnd(44)} ${v}`);
}
