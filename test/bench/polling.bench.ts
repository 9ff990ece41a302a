/**
 * Issue 3 figures: POST /poll over 1,000 enabled OpenRouter connections against an upstream mock
 * that answers every request after 100 ms, with POLL_CONCURRENCY=100 (ideal: 10 waves of 100 ms =
 * 1 s; target under 2 s on SQLite), and the latency of GET /usage while the poll runs (target p99
 * under 50 ms).
 *
 * The mock runs in a child process of its own (this file with `--mock`), so it shares no event
 * loop with the measuring client. Per database: three polls alone (the first with cold worker
 * threads and no previous snapshots, then warm: deltas against the previous poll, as in steady
 * operation); five polls with readers (one client asking for GET /usage every 200 ms, one for
 * GET /health every 20 ms, the latter showing what any request waits for); one poll with a client
 * asking for GET /usage back to back (the worst case); then the same requests on the idle server.
 *
 *   npm run bench -- polling                          (SQLite only)
 *   TEST_DATABASE_URL=postgres://... npm run bench -- polling   (SQLite and PostgreSQL)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { median, report } from './support.js';
import { benchDialects, createBenchDatabase, createConnections, setupAdmin, startBenchServer } from './generate.js';
import { openrouterKey, startUpstreamMock } from '../support/upstream-mock.js';

const PORT = 18_720;
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 1000);
const LATENCY_MS = 100;
const POLL_CONCURRENCY = process.env.BENCH_POLL_CONCURRENCY ?? '100';
const RUNS = 3;
const RUNS_WITH_READERS = 5;
/** A busy dashboard: GET /usage five times a second (each returns all 1,000 rows). */
const USAGE_EVERY_MS = 200;
const HEALTH_EVERY_MS = 20;

/** Child mode: the upstream mock alone in this process; prints its URL and serves until killed. */
async function mockMain(latencyMs: number): Promise<void> {
  const mock = await startUpstreamMock({ latencyMs, record: false });
  mock.route('GET', '/key', { body: openrouterKey({ usage_monthly: 11.58, usage: 211.58 }) });
  mock.route('GET', '/__stats', () => ({ body: mock.stats() }));
  mock.route('POST', '/__clear', () => {
    mock.clearRequests();
    return { body: {} };
  });
  console.log(`MOCK ${mock.url}`);
}

async function startMockProcess(): Promise<{ url: string; child: ChildProcess; stats(): Promise<{ total: number; maxInFlight: number }>; clear(): Promise<void> }> {
  const child = spawn(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), '--mock', String(LATENCY_MS)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /MOCK (\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`mock exited (${code})`)));
  });
  return {
    url,
    child,
    stats: async () => (await (await fetch(`${url}/__stats`)).json()) as { total: number; maxInFlight: number },
    clear: async () => void (await fetch(`${url}/__clear`, { method: 'POST' })),
  };
}

/** CPU seconds a process (all its threads) has used so far. */
function cpuSeconds(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime + stime, in clock ticks
}

/** Busy and total jiffies of the whole machine (every core): the database server's share included. */
function machineTicks(): { busy: number; total: number } {
  const cpu = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!.split(/\s+/).slice(1).map(Number);
  const total = cpu.reduce((a, b) => a + b, 0);
  return { busy: total - cpu[3]! - (cpu[4] ?? 0), total };
}

function percentile(xs: number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
}

const ms = (v: number) => Math.round(v * 10) / 10;
const summary = (xs: number[]) => `${xs.length} requests, p50 ${ms(percentile(xs, 50))} ms, p99 ${ms(percentile(xs, 99))} ms, max ${ms(Math.max(...xs))} ms`;

/**
 * One client requesting `path` until `done` settles: a request every `everyMs` (the next one right
 * away when a request took longer), or back to back with 0. Returns each request's latency.
 */
async function sample(base: string, path: string, token: string, everyMs: number, done: Promise<unknown>): Promise<number[]> {
  let finished = false;
  void done.finally(() => (finished = true));
  const latencies: number[] = [];
  while (!finished) {
    const t = performance.now();
    const res = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${token}` } });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`GET ${path} answered ${res.status}`);
    const took = performance.now() - t;
    latencies.push(took);
    if (everyMs > took && !finished) await Promise.race([done, new Promise((r) => setTimeout(r, everyMs - took))]);
  }
  return latencies;
}

type Readers = 'none' | 'paced' | 'back-to-back';

interface PollRun {
  wall: number;
  ok: number;
  total: number;
  serverCpu: number;
  machineBusy: number;
  upstream: { total: number; maxInFlight: number };
  usage: number[];
  health: number[];
}

async function pollOnce(base: string, token: string, pid: number, mock: Awaited<ReturnType<typeof startMockProcess>>, readers: Readers): Promise<PollRun> {
  await mock.clear();
  const cpu0 = cpuSeconds(pid);
  const m0 = machineTicks();
  const started = performance.now();
  const poll = fetch(`${base}/poll`, { method: 'POST', headers: { authorization: `Bearer ${token}` } }).then(async (res) => {
    const body = (await res.json()) as Array<{ status: string; error_code: string | null; error: string | null }>;
    return { wall: performance.now() - started, status: res.status, body };
  });
  const [usage, health] = await Promise.all([
    readers === 'none' ? [] : sample(base, '/usage', token, readers === 'paced' ? USAGE_EVERY_MS : 0, poll),
    readers === 'paced' ? sample(base, '/health', token, HEALTH_EVERY_MS, poll) : [],
  ]);
  const result = await poll;
  const m1 = machineTicks();
  if (result.status !== 200) throw new Error(`POST /poll answered ${result.status}`);
  const failures = [...new Set(result.body.filter((s) => s.status === 'error').map((s) => `${s.error_code}: ${s.error}`))];
  if (failures.length > 0) console.log(`poll failures: ${failures.join('; ')}`);
  const stats = await mock.stats();
  return {
    wall: result.wall,
    ok: result.body.filter((s) => s.status !== 'error').length,
    total: result.body.length,
    serverCpu: cpuSeconds(pid) - cpu0,
    machineBusy: (m1.busy - m0.busy) / (m1.total - m0.total),
    upstream: { total: stats.total - 1, maxInFlight: stats.maxInFlight }, // less the stats request itself
    usage,
    health,
  };
}

const describeRun = (r: PollRun) =>
  `wall ${Math.round(r.wall)} ms, ${r.ok}/${r.total} ok, ${Math.round((r.total / r.wall) * 1000)} polls/s, server CPU ${r.serverCpu.toFixed(2)} s, machine ${Math.round(r.machineBusy * 100)}% busy, upstream ${r.upstream.total} requests (max ${r.upstream.maxInFlight} in flight)`;

async function run(dialect: 'sqlite' | 'postgresql', port: number, mock: Awaited<ReturnType<typeof startMockProcess>>): Promise<void> {
  const db = await createBenchDatabase(dialect);
  let server: Awaited<ReturnType<typeof startBenchServer>> | undefined;
  try {
    server = await startBenchServer(db, port, { POLL_CONCURRENCY, REQUEST_TIMEOUT_SECONDS: '20' });
    const token = await setupAdmin(server);
    const createdAt = performance.now();
    await createConnections(server.base, token, CONNECTIONS, mock.url);
    const createSeconds = (performance.now() - createdAt) / 1000;
    const pause = () => new Promise((r) => setTimeout(r, 500));

    const rows: Record<string, unknown> = {
      setup: `${CONNECTIONS} connections created through POST /configs in ${createSeconds.toFixed(1)} s; POLL_CONCURRENCY=${POLL_CONCURRENCY}, mock latency ${LATENCY_MS} ms`,
    };
    // 1. The poll alone: cold (new worker threads, no previous snapshots), then warm.
    const alone: PollRun[] = [];
    for (let i = 1; i <= RUNS; i++) {
      const r = await pollOnce(server.base, token, server.pid, mock, 'none');
      alone.push(r);
      rows[`poll alone, run ${i}${i === 1 ? ' (cold)' : ''}`] = describeRun(r);
      await pause();
    }
    // 2. With readers: a dashboard asking for GET /usage every 200 ms, a probe of GET /health every 20 ms.
    const paced: PollRun[] = [];
    for (let i = 1; i <= RUNS_WITH_READERS; i++) {
      const r = await pollOnce(server.base, token, server.pid, mock, 'paced');
      paced.push(r);
      rows[`with readers, run ${i}`] = describeRun(r);
      await pause();
    }
    const usageDuring = paced.flatMap((r) => r.usage);
    const healthDuring = paced.flatMap((r) => r.health);
    rows[`GET /usage every ${USAGE_EVERY_MS} ms during the polls`] = summary(usageDuring);
    rows[`GET /health every ${HEALTH_EVERY_MS} ms during the polls`] = summary(healthDuring);
    // 3. A client asking for GET /usage back to back through the whole poll (the worst case).
    const stress = await pollOnce(server.base, token, server.pid, mock, 'back-to-back');
    rows['with GET /usage back to back'] = describeRun(stress);
    rows['GET /usage back to back during the poll'] = summary(stress.usage);
    await pause();
    // The same requests on the idle server, with the same 1,000 rows: what the poll adds.
    const idleUsage = await sample(server.base, '/usage', token, 0, new Promise((r) => setTimeout(r, 3000)));
    const idleHealth = await sample(server.base, '/health', token, 0, new Promise((r) => setTimeout(r, 1000)));
    rows['GET /usage idle (1,000 rows), back to back'] = summary(idleUsage);
    rows['GET /health idle, back to back'] = summary(idleHealth);
    rows['=> poll wall time, warm, alone / with readers (target < 2 s)'] = `${Math.round(median(alone.slice(1).map((r) => r.wall)))} ms / ${Math.round(median(paced.map((r) => r.wall)))} ms (medians)`;
    rows['=> GET /usage p99 during the poll (target < 50 ms)'] = `${ms(percentile(usageDuring, 99))} ms (idle p99 ${ms(percentile(idleUsage, 99))} ms)`;
    report(`POST /poll, ${CONNECTIONS} connections, upstream answering in ${LATENCY_MS} ms (${dialect})`, rows);
    await server.stop();
  } catch (err) {
    console.error(`server output:\n${server?.output().slice(-4000)}`);
    throw err;
  } finally {
    await db.drop();
  }
}

if (process.argv[2] === '--mock') {
  await mockMain(Number(process.argv[3] ?? LATENCY_MS));
} else {
  const mock = await startMockProcess();
  try {
    let port = PORT;
    for (const dialect of benchDialects()) await run(dialect, port++, mock);
  } finally {
    mock.child.kill('SIGTERM');
  }
}
