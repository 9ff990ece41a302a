import crypto from 'node:crypto';
import { Writable } from 'node:stream';
import { startServer, type RunningServer } from '@usage-monitor/server';
import type { TestDatabase } from './databases.js';

/** A clock tests can move forward (session expiry, code expiry, token expiry). */
export class TestClock {
  offsetMs = 0;
  now = (): Date => new Date(Date.now() + this.offsetMs);
  advance(ms: number): void {
    this.offsetMs += ms;
  }
}

/** Collects every log line the server writes, so tests can read setup codes and look for leaks. */
export class LogCapture extends Writable {
  lines: string[] = [];
  override _write(chunk: Buffer, _enc: string, cb: () => void): void {
    this.lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    cb();
  }
  text(): string {
    return this.lines.join('\n');
  }
}

export interface TestServer {
  url: string;
  running: RunningServer;
  clock: TestClock;
  logs: LogCapture;
  env: Record<string, string>;
  setupCode: string | null;
  /** Restarts on the same database and data dir (optionally with changed env). */
  restart(envChanges?: Record<string, string | undefined>): Promise<TestServer>;
  close(): Promise<void>;
}

export interface TestServerOptions {
  env?: Record<string, string>;
  clock?: TestClock;
  onQuery?: (sql: string) => void;
}

export const TEST_PASSWORD = 'correct horse battery staple';

async function boot(env: Record<string, string>, clock: TestClock, onQuery?: (sql: string) => void, drop?: () => Promise<void>): Promise<TestServer> {
  const logs = new LogCapture();
  const running = await startServer({ env, clock, logDestination: logs, onQuery });
  const server: TestServer = {
    url: running.url!,
    running,
    clock,
    logs,
    env,
    setupCode: running.setupCode,
    async restart(envChanges = {}) {
      await running.close();
      const next: Record<string, string> = { ...env };
      for (const [k, v] of Object.entries(envChanges)) {
        if (v === undefined) delete next[k];
        else next[k] = v;
      }
      return boot(next, clock, onQuery, drop);
    },
    async close() {
      await running.close();
      await drop?.();
    },
  };
  return server;
}

/** Starts a real server on a random loopback port against a fresh database. */
export async function startTestServer(db: TestDatabase, opts: TestServerOptions = {}): Promise<TestServer> {
  const created = await db.create();
  const env: Record<string, string> = {
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    AUTO_POLL_ENABLED: 'false',
    ENCRYPTION_KEY: crypto.randomBytes(32).toString('base64'),
    ...created.env,
    ...opts.env,
  };
  try {
    return await boot(env, opts.clock ?? new TestClock(), opts.onQuery, created.drop);
  } catch (err) {
    await created.drop();
    throw err;
  }
}

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

/** One HTTP request to the server under test; JSON in, JSON (or text) out. */
export async function api<T = any>(
  server: { url: string },
  method: string,
  path: string,
  opts: { token?: string | null; body?: unknown; rawBody?: string | Buffer; headers?: Record<string, string> } = {},
): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  let body: string | Buffer | undefined;
  if (opts.rawBody !== undefined) body = opts.rawBody;
  else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(`${server.url}/api/v1${path}`, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    /* not JSON */
  }
  return { status: res.status, headers: res.headers, body: parsed as T, text };
}

/** Completes the setup flow and returns an admin session token. */
export async function setupAdmin(server: TestServer): Promise<string> {
  const res = await api(server, 'POST', '/auth/setup', { body: { code: server.setupCode, password: TEST_PASSWORD } });
  if (res.status !== 200) throw new Error(`setup failed: ${res.status} ${res.text}`);
  return res.body.access_token as string;
}

export async function createToken(server: TestServer, admin: string, scopes: string[], extra: Record<string, unknown> = {}): Promise<string> {
  const res = await api(server, 'POST', '/api-tokens', { token: admin, body: { name: `t-${scopes.join('-') || 'none'}`, scopes, ...extra } });
  if (res.status !== 201) throw new Error(`token creation failed: ${res.status} ${res.text}`);
  return res.body.token as string;
}
