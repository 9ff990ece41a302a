/**
 * Benchmark fixtures: throwaway databases (SQLite in a temp dir; PostgreSQL as a database created
 * for the run and dropped after), the production server on them with an admin session, connections
 * created through the API, and history written straight into the database in bulk: hourly snapshots
 * shaped like the OpenRouter plugin's, the observations the server would derive from them, and
 * connection_state pointers that agree with the snapshots.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import pg from 'pg';
import { deriveObservations, type Metric, type MetricSpec, type ObservationDraft } from '@usage-monitor/core';
import openrouter from '@usage-monitor/provider-openrouter';
import { spawnServer, stop, tempDir, waitFor } from './support.js';
import { openrouterKey } from '../support/upstream-mock.js';

// ---------------------------------------------------------------------------------------------------------
// Databases
// ---------------------------------------------------------------------------------------------------------

export type Dialect = 'sqlite' | 'postgresql';

export interface BenchDatabase {
  dialect: Dialect;
  /** Environment that points the server at this database. */
  env: Record<string, string>;
  dataDir: string;
  /** PostgreSQL only: the URL of the throwaway database. */
  url: string | null;
  drop(): Promise<void>;
}

/** The PostgreSQL server to create throwaway databases on (BENCH_DATABASE_URL, else TEST_DATABASE_URL), or null. */
export function postgresAdminUrl(): string | null {
  return process.env.BENCH_DATABASE_URL?.trim() || process.env.TEST_DATABASE_URL?.trim() || null;
}

/** SQLite always; PostgreSQL when an admin URL is set. */
export function benchDialects(): Dialect[] {
  if (!postgresAdminUrl()) {
    console.log('\n(PostgreSQL skipped: set BENCH_DATABASE_URL or TEST_DATABASE_URL, e.g. postgres://postgres@127.0.0.1:5432/test)');
    return ['sqlite'];
  }
  return ['sqlite', 'postgresql'];
}

export async function createBenchDatabase(dialect: Dialect): Promise<BenchDatabase> {
  const dataDir = tempDir();
  const removeDir = () => fs.rmSync(dataDir, { recursive: true, force: true });
  if (dialect === 'sqlite') {
    return { dialect, env: { DATA_DIR: dataDir }, dataDir, url: null, drop: async () => removeDir() };
  }
  const adminUrl = postgresAdminUrl();
  if (!adminUrl) throw new Error('no PostgreSQL URL (BENCH_DATABASE_URL or TEST_DATABASE_URL)');
  const name = `um_bench_${process.pid}_${crypto.randomBytes(4).toString('hex')}`;
  await adminQuery(adminUrl, `create database "${name}"`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    dialect,
    env: { DATABASE_URL: url.toString(), DATA_DIR: dataDir },
    dataDir,
    url: url.toString(),
    drop: async () => {
      await adminQuery(adminUrl, `drop database if exists "${name}" with (force)`);
      removeDir();
    },
  };
}

async function adminQuery(url: string, sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

// ---------------------------------------------------------------------------------------------------------
// The server
// ---------------------------------------------------------------------------------------------------------

export interface BenchServer {
  base: string;
  pid: number;
  stop(): Promise<void>;
}

/** Starts the compiled server on `port` with the database's env; history retention is stretched past a year. */
export async function startBenchServer(db: BenchDatabase, port: number, env: Record<string, string>): Promise<BenchServer & { output: () => string }> {
  const { child, output } = spawnServer({
    PORT: String(port),
    HOST: '127.0.0.1',
    AUTO_POLL_ENABLED: 'false',
    // The generated year must survive the retention job (its first run is a minute after start).
    SNAPSHOT_RETENTION_DAYS: '400',
    ANALYTICS_HOURLY_RETENTION_DAYS: '400',
    ...db.env,
    ...env,
  });
  const base = `http://127.0.0.1:${port}/api/v1`;
  try {
    await waitFor(`${base}/auth/status`, 60_000);
  } catch (err) {
    child.kill('SIGKILL');
    throw new Error(`${(err as Error).message}\n${output()}`);
  }
  return { base, pid: child.pid!, output, stop: () => stop(child) };
}

export async function setupAdmin(server: { base: string; output: () => string }): Promise<string> {
  const code = /setup code: ([A-Z2-9-]+)/.exec(server.output())?.[1];
  const res = await fetch(`${server.base}/auth/setup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ code, password: 'benchmark password' }),
  });
  if (res.status !== 200) throw new Error(`setup failed: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { access_token: string }).access_token;
}

export interface CreatedConnection {
  id: number;
  apiKey: string;
}

/**
 * Creates `count` OpenRouter connections through POST /configs (a few at a time). Every fifth one
 * has alert thresholds, so GET /usage and /homepage evaluate alerts as they would in real use.
 */
export async function createConnections(base: string, token: string, count: number, baseUrl: string | null, parallel = 8): Promise<CreatedConnection[]> {
  const out: CreatedConnection[] = new Array(count);
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      const apiKey = `sk-or-v1-bench-${String(i).padStart(4, '0')}-${crypto.randomBytes(12).toString('hex')}`;
      const body: Record<string, unknown> = { provider: 'openrouter', api_key: apiKey, label: `Key ${String(i).padStart(4, '0')}` };
      if (baseUrl) body.base_url = baseUrl;
      if (i % 5 === 0) {
        body.alert_thresholds = [
          { metric: 'Limit used', direction: 'increasing', warning: 75, critical: 90, exhausted: 100 },
          { metric: 'Usage today', direction: 'increasing', warning: 0.25, critical: 1 },
        ];
      }
      const res = await fetch(`${base}/configs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      if (res.status !== 201) throw new Error(`create failed: ${res.status} ${await res.text()}`);
      out[i] = { id: ((await res.json()) as { id: number }).id, apiKey };
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// History
// ---------------------------------------------------------------------------------------------------------

const HOUR = 3_600_000;
const SPECS = openrouter.metrics as Record<string, MetricSpec>;

interface SnapshotRow {
  id: number;
  connection_id: number;
  status: 'healthy' | 'degraded' | 'error';
  summary: string;
  metrics: string;
  raw: string;
  error_code: string | null;
  error_message: string | null;
  checked_at: number;
  duration_ms: number;
}

interface ObservationRow {
  connection_id: number;
  metric: string;
  value: number;
  unit: string;
  kind: string;
  source: string;
  observed_at: number;
  window_start: number | null;
  window_end: number | null;
  reset_at: number | null;
}

interface StateRow {
  connection_id: number;
  last_attempt_at: number;
  last_success_at: number | null;
  last_failure_at: number | null;
  consecutive_failures: number;
  latest_snapshot_id: number;
  last_good_snapshot_id: number | null;
  next_poll_at: number;
}

/** A deterministic PRNG (mulberry32), so every run writes the same history. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const round4 = (v: number) => Math.round(v * 1e4) / 1e4;

/** One simulated OpenRouter key: spend accrues hourly, day/week/month counters reset on UTC boundaries. */
class SimulatedKey {
  private total: number;
  private day = 0;
  private week = 0;
  private month = 0;
  private lastAt = 0;
  readonly limit: number | null;
  private readonly rate: number;
  previous: { checked_at: string; metrics: Metric[] } | null = null;
  consecutiveFailures = 0;
  lastSuccessAt: number | null = null;
  lastFailureAt: number | null = null;
  lastGoodId: number | null = null;

  constructor(
    readonly connectionId: number,
    private readonly rnd: () => number,
  ) {
    this.limit = [null, 25, 50, 100, 250][Math.floor(rnd() * 5)]!;
    this.rate = 0.002 + rnd() * 0.05; // USD per hour, on average
    this.total = round4(rnd() * 300);
  }

  /** Advances to `at` and returns the plugin-shaped result. */
  read(at: number): { status: 'healthy' | 'degraded'; summary: string; metrics: Metric[]; raw: unknown } {
    const d = new Date(at);
    const prev = new Date(this.lastAt || at);
    if (d.getUTCDate() !== prev.getUTCDate() || at - this.lastAt >= 24 * HOUR) this.day = 0;
    if (d.getUTCDay() === 1 && prev.getUTCDay() !== 1) this.week = 0;
    if (d.getUTCMonth() !== prev.getUTCMonth()) this.month = 0;
    this.lastAt = at;
    const hour = d.getUTCHours();
    const busy = hour >= 8 && hour <= 20 ? 1.6 : 0.3;
    const spend = this.rnd() < 0.15 ? 0 : round4(-Math.log(1 - this.rnd()) * this.rate * busy);
    const capped = this.limit !== null ? Math.min(spend, Math.max(0, this.limit - this.month)) : spend;
    this.total = round4(this.total + capped);
    this.day = round4(this.day + capped);
    this.week = round4(this.week + capped);
    this.month = round4(this.month + capped);
    const remaining = this.limit !== null ? round4(Math.max(0, this.limit - this.month)) : null;
    const used = this.limit !== null && remaining !== null ? Math.round(((this.limit - remaining) / this.limit) * 1e4) / 100 : null;
    const metrics: Metric[] = [
      { label: 'Usage this month', value: this.month, unit: 'USD', maximum: null },
      { label: 'Usage this week', value: this.week, unit: 'USD', maximum: null },
      { label: 'Usage today', value: this.day, unit: 'USD', maximum: null },
      { label: 'Usage total', value: this.total, unit: 'USD', maximum: null },
      { label: 'Limit remaining', value: remaining, unit: 'USD', maximum: this.limit },
      { label: 'Limit', value: this.limit, unit: 'USD', maximum: null },
      { label: 'Limit used', value: used, unit: 'percent', maximum: 100 },
    ];
    const exhausted = this.limit !== null && remaining !== null && remaining <= 0;
    const summary = `$${this.month.toFixed(2)} this month, ${this.limit !== null ? `$${(remaining ?? 0).toFixed(2)} of $${this.limit.toFixed(2)} limit left` : 'no key limit'}`;
    // What the plugin stores: the /key body without OpenRouter's masked `label`.
    const { label: _label, ...key } = openrouterKey({
      limit: this.limit,
      limit_remaining: remaining,
      limit_reset: this.limit !== null ? 'monthly' : null,
      usage: this.total,
      usage_daily: this.day,
      usage_weekly: this.week,
      usage_monthly: this.month,
      creator_user_id: `user_2xBench${String(this.connectionId).padStart(16, '0')}`,
    }).data;
    const raw = { key };
    return { status: exhausted ? 'degraded' : 'healthy', summary: exhausted ? `Key limit exhausted: ${summary}` : summary, metrics, raw };
  }
}

const ERRORS: Array<{ code: string; message: string }> = [
  { code: 'upstream_error', message: 'OpenRouter answered 502 Bad Gateway' },
  { code: 'timeout', message: 'The request to openrouter.ai timed out after 20000 ms' },
  { code: 'rate_limited', message: 'OpenRouter answered 429 Too Many Requests' },
];

export interface HistoryOptions {
  /** Snapshots per connection, one an hour, the newest `endAgoMs` before now. Default 8760 (a year). */
  hours?: number;
  endAgoMs?: number;
  /** Share of polls that fail (error snapshots, no observations). Default 0.004. */
  errorRate?: number;
  /** Also write the observations the server would derive. Default true. */
  observations?: boolean;
}

export interface HistoryResult {
  snapshots: number;
  observations: number;
  seconds: number;
}

/**
 * Writes hourly history for `connectionIds` into the database (the server must be stopped, or at
 * least idle). Rows go in time order across connections, as polling would write them.
 */
export async function generateHistory(db: BenchDatabase, connectionIds: number[], opts: HistoryOptions = {}): Promise<HistoryResult> {
  const started = performance.now();
  const hours = opts.hours ?? 8760;
  const errorRate = opts.errorRate ?? 0.004;
  const withObservations = opts.observations ?? true;
  const end = Date.now() - (opts.endAgoMs ?? 10 * 60_000);
  const first = end - (hours - 1) * HOUR;
  const rnd = prng(20261121);
  const keys = connectionIds.map((id) => new SimulatedKey(id, rnd));
  // Two connections end in trouble, as some do: one failing for the last three polls, one whose
  // last success is a day old (stale, with last-known-good shown).
  const failingTail = new Map<number, number>();
  if (keys.length > 2) {
    failingTail.set(keys[1]!.connectionId, 3);
    failingTail.set(keys[2]!.connectionId, 24);
  }

  const writer = db.dialect === 'sqlite' ? new SqliteWriter(path.join(db.dataDir, 'usage-monitor.db')) : await PgWriter.open(db.url!);
  let nextId = (await writer.maxSnapshotId()) + 1;
  let snapshotCount = 0;
  let observationCount = 0;
  const latest = new Map<number, { id: number; at: number }>();
  try {
    await writer.begin();
    let snapshots: SnapshotRow[] = [];
    let observations: ObservationRow[] = [];
    for (let h = 0; h < hours; h++) {
      const hourStart = first + h * HOUR;
      for (const key of keys) {
        // Polls of one run spread over a few seconds, with jitter.
        const at = hourStart + Math.floor(rnd() * 4000);
        const id = nextId++;
        const tail = failingTail.get(key.connectionId) ?? 0;
        const reading = key.read(at);
        const fails = h >= hours - tail || rnd() < errorRate;
        const duration = 80 + Math.floor(rnd() * 320);
        if (fails) {
          const e = ERRORS[Math.floor(rnd() * ERRORS.length)]!;
          snapshots.push({ id, connection_id: key.connectionId, status: 'error', summary: e.message, metrics: '[]', raw: '{}', error_code: e.code, error_message: e.message, checked_at: at, duration_ms: duration });
          key.consecutiveFailures++;
          key.lastFailureAt = at;
        } else {
          snapshots.push({
            id,
            connection_id: key.connectionId,
            status: reading.status,
            summary: reading.summary,
            metrics: JSON.stringify(reading.metrics),
            raw: JSON.stringify(reading.raw),
            error_code: null,
            error_message: null,
            checked_at: at,
            duration_ms: duration,
          });
          const current = { checked_at: new Date(at).toISOString(), metrics: reading.metrics };
          if (withObservations) {
            for (const o of deriveObservations({ specs: SPECS, current, previous: key.previous })) observations.push(observationRow(key.connectionId, o));
          }
          key.previous = current;
          key.consecutiveFailures = 0;
          key.lastSuccessAt = at;
          key.lastGoodId = id;
        }
        latest.set(key.connectionId, { id, at });
      }
      if (snapshots.length >= 2_000) {
        snapshotCount += snapshots.length;
        await writer.snapshots(snapshots);
        snapshots = [];
      }
      if (observations.length >= 20_000) {
        observationCount += observations.length;
        await writer.observations(observations);
        observations = [];
      }
    }
    snapshotCount += snapshots.length;
    observationCount += observations.length;
    await writer.snapshots(snapshots);
    await writer.observations(observations);
    await writer.states(
      keys.map((k) => {
        const l = latest.get(k.connectionId)!;
        return {
          connection_id: k.connectionId,
          last_attempt_at: l.at,
          last_success_at: k.lastSuccessAt,
          last_failure_at: k.lastFailureAt,
          consecutive_failures: k.consecutiveFailures,
          latest_snapshot_id: l.id,
          last_good_snapshot_id: k.lastGoodId,
          next_poll_at: l.at + HOUR,
        };
      }),
    );
    await writer.commit();
  } finally {
    await writer.close();
  }
  return { snapshots: snapshotCount, observations: observationCount, seconds: Math.round((performance.now() - started) / 100) / 10 };
}

function observationRow(connectionId: number, o: ObservationDraft): ObservationRow {
  const ms = (s: string | null) => (s === null ? null : Date.parse(s));
  return {
    connection_id: connectionId,
    metric: o.metric,
    value: o.value,
    unit: o.unit,
    kind: o.kind,
    source: o.source,
    observed_at: Date.parse(o.observed_at),
    window_start: ms(o.window_start),
    window_end: ms(o.window_end),
    reset_at: ms(o.reset_at),
  };
}

interface Writer {
  maxSnapshotId(): Promise<number>;
  begin(): Promise<void>;
  snapshots(rows: SnapshotRow[]): Promise<void>;
  observations(rows: ObservationRow[]): Promise<void>;
  states(rows: StateRow[]): Promise<void>;
  commit(): Promise<void>;
  close(): Promise<void>;
}

/** The slice of better-sqlite3 used here (the package ships no types of its own). */
interface SqliteDb {
  pragma(s: string): unknown;
  prepare(sql: string): { run(...params: unknown[]): unknown; get(...params: unknown[]): unknown };
  exec(sql: string): void;
  close(): void;
}

/** better-sqlite3 straight on the file: prepared statements in one transaction. Timestamps are epoch ms. */
class SqliteWriter implements Writer {
  private readonly db: SqliteDb;
  private readonly insertSnapshot;
  private readonly insertObservation;
  private readonly upsertState;

  constructor(file: string) {
    const Database = createRequire(import.meta.url)('better-sqlite3') as new (file: string) => SqliteDb;
    this.db = new Database(file);
    this.db.pragma('journal_mode = wal');
    this.db.pragma('synchronous = off');
    this.insertSnapshot = this.db.prepare(
      'insert into usage_snapshot (id, connection_id, provider, status, summary, metrics, raw, error_code, error_message, checked_at, duration_ms) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    this.insertObservation = this.db.prepare(
      'insert into usage_observation (connection_id, provider, metric, value, unit, kind, source, observed_at, window_start, window_end, reset_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    this.upsertState = this.db.prepare(
      `insert into connection_state (connection_id, last_attempt_at, last_success_at, last_failure_at, consecutive_failures, latest_snapshot_id, last_good_snapshot_id, next_poll_at, backoff_until, lease_owner, lease_until)
       values (?, ?, ?, ?, ?, ?, ?, ?, null, null, null)
       on conflict (connection_id) do update set last_attempt_at = excluded.last_attempt_at, last_success_at = excluded.last_success_at,
         last_failure_at = excluded.last_failure_at, consecutive_failures = excluded.consecutive_failures, latest_snapshot_id = excluded.latest_snapshot_id,
         last_good_snapshot_id = excluded.last_good_snapshot_id, next_poll_at = excluded.next_poll_at, backoff_until = null, lease_owner = null, lease_until = null`,
    );
  }

  async maxSnapshotId(): Promise<number> {
    return Number((this.db.prepare('select coalesce(max(id), 0) as m from usage_snapshot').get() as { m: number }).m);
  }
  async begin(): Promise<void> {
    this.db.exec('begin');
  }
  async snapshots(rows: SnapshotRow[]): Promise<void> {
    for (const r of rows) {
      this.insertSnapshot.run(r.id, r.connection_id, 'openrouter', r.status, r.summary, r.metrics, r.raw, r.error_code, r.error_message, r.checked_at, r.duration_ms);
    }
  }
  async observations(rows: ObservationRow[]): Promise<void> {
    for (const r of rows) {
      this.insertObservation.run(r.connection_id, 'openrouter', r.metric, r.value, r.unit, r.kind, r.source, r.observed_at, r.window_start, r.window_end, r.reset_at);
    }
  }
  async states(rows: StateRow[]): Promise<void> {
    for (const r of rows) {
      this.upsertState.run(r.connection_id, r.last_attempt_at, r.last_success_at, r.last_failure_at, r.consecutive_failures, r.latest_snapshot_id, r.last_good_snapshot_id, r.next_poll_at);
    }
  }
  async commit(): Promise<void> {
    this.db.exec('commit');
    this.db.exec('analyze');
    this.db.pragma('wal_checkpoint(TRUNCATE)');
  }
  async close(): Promise<void> {
    this.db.close();
  }
}

/** pg with multi-row inserts from arrays (`unnest`), a few thousand rows a statement. */
class PgWriter implements Writer {
  private constructor(private readonly client: pg.Client) {}

  static async open(url: string): Promise<PgWriter> {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query('set synchronous_commit = off');
    return new PgWriter(client);
  }

  async maxSnapshotId(): Promise<number> {
    return Number((await this.client.query('select coalesce(max(id), 0) as m from usage_snapshot')).rows[0].m);
  }
  async begin(): Promise<void> {
    await this.client.query('begin');
  }
  async snapshots(rows: SnapshotRow[]): Promise<void> {
    if (rows.length === 0) return;
    const col = <K extends keyof SnapshotRow>(k: K) => rows.map((r) => r[k]);
    await this.client.query(
      `insert into usage_snapshot (id, connection_id, provider, status, summary, metrics, raw, error_code, error_message, checked_at, duration_ms)
       select id, cid, 'openrouter', st, su, m::jsonb, r::jsonb, ec, em, to_timestamp(at / 1000.0), d
       from unnest($1::int[], $2::int[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::float8[], $10::int[])
         as t(id, cid, st, su, m, r, ec, em, at, d)`,
      [col('id'), col('connection_id'), col('status'), col('summary'), col('metrics'), col('raw'), col('error_code'), col('error_message'), col('checked_at'), col('duration_ms')],
    );
  }
  async observations(rows: ObservationRow[]): Promise<void> {
    if (rows.length === 0) return;
    const col = <K extends keyof ObservationRow>(k: K) => rows.map((r) => r[k]);
    await this.client.query(
      `insert into usage_observation (connection_id, provider, metric, value, unit, kind, source, observed_at, window_start, window_end, reset_at)
       select cid, 'openrouter', m, v, u, k, s, to_timestamp(oa / 1000.0), to_timestamp(ws / 1000.0), to_timestamp(we / 1000.0), to_timestamp(ra / 1000.0)
       from unnest($1::int[], $2::text[], $3::float8[], $4::text[], $5::text[], $6::text[], $7::float8[], $8::float8[], $9::float8[], $10::float8[])
         as t(cid, m, v, u, k, s, oa, ws, we, ra)`,
      [col('connection_id'), col('metric'), col('value'), col('unit'), col('kind'), col('source'), col('observed_at'), col('window_start'), col('window_end'), col('reset_at')],
    );
  }
  async states(rows: StateRow[]): Promise<void> {
    const col = <K extends keyof StateRow>(k: K) => rows.map((r) => r[k]);
    await this.client.query(
      `insert into connection_state (connection_id, last_attempt_at, last_success_at, last_failure_at, consecutive_failures, latest_snapshot_id, last_good_snapshot_id, next_poll_at)
       select cid, to_timestamp(la / 1000.0), to_timestamp(ls / 1000.0), to_timestamp(lf / 1000.0), cf, lid, gid, to_timestamp(np / 1000.0)
       from unnest($1::int[], $2::float8[], $3::float8[], $4::float8[], $5::int[], $6::int[], $7::int[], $8::float8[]) as t(cid, la, ls, lf, cf, lid, gid, np)
       on conflict (connection_id) do update set last_attempt_at = excluded.last_attempt_at, last_success_at = excluded.last_success_at,
         last_failure_at = excluded.last_failure_at, consecutive_failures = excluded.consecutive_failures, latest_snapshot_id = excluded.latest_snapshot_id,
         last_good_snapshot_id = excluded.last_good_snapshot_id, next_poll_at = excluded.next_poll_at, backoff_until = null, lease_owner = null, lease_until = null`,
      [col('connection_id'), col('last_attempt_at'), col('last_success_at'), col('last_failure_at'), col('consecutive_failures'), col('latest_snapshot_id'), col('last_good_snapshot_id'), col('next_poll_at')],
    );
  }
  async commit(): Promise<void> {
    await this.client.query('commit');
    await this.client.query(`select setval(pg_get_serial_sequence('usage_snapshot', 'id'), (select max(id) from usage_snapshot))`);
    // What autovacuum would do soon after a bulk load; without it the planner knows nothing of the rows.
    await this.client.query('analyze');
  }
  async close(): Promise<void> {
    await this.client.end();
  }
}
