/**
 * Issue 3 figures: GET /usage and GET /homepage with 50 connections and a year of hourly snapshots
 * each (438,000 snapshots plus the observations derived from them), on SQLite and PostgreSQL.
 * Target: p50 under 20 ms. The history is written in bulk into the server's database
 * (test/bench/generate.ts); the compiled server is restarted on it and loaded with autocannon:
 * one connection (the latency of a single client, requests back to back) and 10 connections (a
 * busy dashboard; queueing included).
 *
 *   npm run bench -- usage                          (SQLite only)
 *   TEST_DATABASE_URL=postgres://... npm run bench -- usage   (SQLite and PostgreSQL)
 */
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { load, report, rssMb, type LoadResult } from './support.js';
import { benchDialects, createBenchDatabase, createConnections, generateHistory, setupAdmin, startBenchServer, type BenchDatabase } from './generate.js';

const PORT = 18_700;
const CONNECTIONS = 50;
const HOURS = 8760;

const fmt = (r: LoadResult) => `p50 ${r.p50} ms, p99 ${r.p99} ms, ${r.requestsPerSec} req/s${r.errors + r.non2xx ? `, errors ${r.errors}, non-2xx ${r.non2xx}` : ''}`;

async function databaseSizeMb(db: BenchDatabase): Promise<number> {
  if (db.dialect === 'sqlite') {
    const bytes = fs.readdirSync(db.dataDir).filter((f) => f.startsWith('usage-monitor.db')).reduce((n, f) => n + fs.statSync(path.join(db.dataDir, f)).size, 0);
    return Math.round(bytes / 1048576);
  }
  const c = new pg.Client({ connectionString: db.url! });
  await c.connect();
  try {
    return Math.round(Number((await c.query('select pg_database_size(current_database()) as b')).rows[0].b) / 1048576);
  } finally {
    await c.end();
  }
}

async function run(dialect: 'sqlite' | 'postgresql', port: number): Promise<void> {
  const db = await createBenchDatabase(dialect);
  try {
    // Connections through the API (encrypted credentials, real rows), then the history in bulk.
    let server = await startBenchServer(db, port, {});
    const token = await setupAdmin(server);
    const created = await createConnections(server.base, token, CONNECTIONS, null);
    await server.stop();
    const history = await generateHistory(
      db,
      created.map((c) => c.id),
      { hours: HOURS },
    );
    const sizeMb = await databaseSizeMb(db);

    server = await startBenchServer(db, port, {});
    const headers = { authorization: `Bearer ${token}` };
    const usage = (await (await fetch(`${server.base}/usage`, { headers })).json()) as Array<{ health: { status: string }; alert_state: string }>;
    const homepage = (await (await fetch(`${server.base}/homepage`, { headers })).json()) as { summary: string };
    if (usage.length !== CONNECTIONS) throw new Error(`GET /usage returned ${usage.length} rows`);
    const health: Record<string, number> = {};
    for (const row of usage) health[row.health.status] = (health[row.health.status] ?? 0) + 1;
    const alerts = usage.filter((r) => r.alert_state !== 'normal').length;
    const bodyKb = async (p: string) => Math.round((await (await fetch(`${server.base}${p}`, { headers })).arrayBuffer()).byteLength / 102.4) / 10;

    await load(`${server.base}/usage`, { headers, connections: 4, durationSec: 2 }); // warm-up (JIT, caches)
    await load(`${server.base}/homepage`, { headers, connections: 4, durationSec: 2 });
    const usage1 = await load(`${server.base}/usage`, { headers, connections: 1, durationSec: 5 });
    const usage10 = await load(`${server.base}/usage`, { headers, connections: 10, durationSec: 5 });
    const home1 = await load(`${server.base}/homepage`, { headers, connections: 1, durationSec: 5 });
    const home10 = await load(`${server.base}/homepage`, { headers, connections: 10, durationSec: 5 });
    const rss = rssMb(server.pid);
    report(`GET /usage and /homepage, ${CONNECTIONS} connections x ${HOURS} hourly snapshots (${dialect})`, {
      'history written': `${history.snapshots} snapshots, ${history.observations} observations in ${history.seconds} s`,
      'database size (MB)': sizeMb,
      'health of the 50 rows': Object.entries(health)
        .map(([k, v]) => `${k} ${v}`)
        .join(', '),
      'rows with an alert': alerts,
      'homepage summary': homepage.summary,
      'response size /usage, /homepage (KB)': `${await bodyKb('/usage')}, ${await bodyKb('/homepage')}`,
      'GET /usage, 1 client (target p50 < 20 ms)': fmt(usage1),
      'GET /usage, 10 clients': fmt(usage10),
      'GET /homepage, 1 client (target p50 < 20 ms)': fmt(home1),
      'GET /homepage, 10 clients': fmt(home10),
      'server RSS after the runs (MB)': rss,
    });
    await server.stop();
  } finally {
    await db.drop();
  }
}

let port = PORT;
for (const dialect of benchDialects()) await run(dialect, port++);
