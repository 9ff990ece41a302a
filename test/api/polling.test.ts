import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { testDatabases } from '../support/databases.js';
import { api, createToken, setupAdmin, startTestServer, type TestServer } from '../support/server.js';
import { openrouterKey, startUpstreamMock, type UpstreamMock } from '../support/upstream-mock.js';

const CHAOS = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'plugin-chaos.mjs');
const KEY = 'sk-or-v1-polling-test-key-1234567890';
const CHAOS_KEY = 'chaos-secret-key-abcdefgh';
const HOUR = 3600_000;

/** fetch() will not send a Host header of our choosing; node:http will. */
function withHost(server: { url: string }, path: string, host: string, token?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${server.url}/api/v1${path}`, { headers: { host, ...(token ? { authorization: `Bearer ${token}` } : {}) } }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end();
  });
}

const credits = (used: number | null, remaining: number | null, native?: unknown[]) => ({
  metrics: [
    { label: 'Credits used', value: used, unit: 'credits', maximum: null },
    { label: 'Credits remaining', value: remaining, unit: 'credits', maximum: 100 },
    { label: 'Credit limit', value: 100, unit: 'credits', maximum: null },
  ],
  ...(native ? { native } : {}),
});

for (const db of testDatabases()) {
  describe(`polling and current state (${db.name})`, () => {
    let server: TestServer;
    let admin: string;
    let mock: UpstreamMock;
    const add = async (body: Record<string, unknown>) => {
      const res = await api(server, 'POST', '/configs', { token: admin, body });
      assert.equal(res.status, 201, res.text);
      return res.body.id as number;
    };
    const poll = (id: number) => api(server, 'POST', `/configs/${id}/poll`, { token: admin });
    const usageOf = async (id: number) => (await api(server, 'GET', '/usage', { token: admin })).body.find((r: { config: { id: number } }) => r.config.id === id);
    const observations = async (id: number) =>
      (await server.running.services.polling.sql.knex('usage_observation').where({ connection_id: id }).orderBy('id')) as Array<Record<string, unknown>>;

    before(async () => {
      mock = await startUpstreamMock();
      server = await startTestServer(db, {
        env: {
          PLUGINS: `@usage-monitor/provider-openrouter,${CHAOS}`,
          REQUEST_TIMEOUT_SECONDS: '1',
          AUTO_POLL_INTERVAL_MINUTES: '60',
          HOMEPAGE_ALLOWED_HOSTS: 'dashboard.local',
          WORKER_THREADS: '2',
          POLL_CONCURRENCY: '8',
        },
      });
      admin = await setupAdmin(server);
    });
    after(async () => {
      await server.close();
      await mock.close();
    });

    let orId: number;
    test('an on-demand poll stores a snapshot; history returns it; /usage says healthy', async () => {
      mock.forKey(KEY, 'GET', '/key', { body: openrouterKey({ usage_monthly: 11.58, limit: 50, limit_remaining: 38.42 }) });
      orId = await add({ provider: 'openrouter', api_key: KEY, base_url: mock.url, label: 'Work' });
      const before = await usageOf(orId);
      assert.equal(before.health.status, 'never_connected');
      assert.equal(before.latest, null);
      const res = await poll(orId);
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.status, 'healthy');
      assert.equal(res.body.provider_config_id, orId);
      assert.deepEqual(res.body.metrics.find((m: { label: string }) => m.label === 'Usage this month'), { label: 'Usage this month', value: 11.58, unit: 'USD', maximum: null });
      assert.ok(!res.text.includes(KEY));
      const history = await api(server, 'GET', `/configs/${orId}/history`, { token: admin });
      assert.equal(history.status, 200);
      assert.equal(history.body.length, 1);
      assert.equal(history.body[0].id, res.body.id);
      const row = await usageOf(orId);
      assert.equal(row.health.status, 'healthy');
      assert.equal(row.latest.id, res.body.id);
      assert.equal(row.last_good, null);
      assert.equal(row.config.api_key_masked, '••••••••');
      assert.equal(mock.requests('GET', '/key').at(-1)?.headers.authorization, `Bearer ${KEY}`);
    });

    test('failure after success: stale with last_good, counted failures, sanitized error; later error', async () => {
      mock.forKey(KEY, 'GET', '/key', { status: 500, body: { error: { message: `internal failure for key ${KEY}` } } });
      const failed = await poll(orId);
      assert.equal(failed.status, 200);
      assert.equal(failed.body.status, 'error');
      assert.equal(failed.body.error_code, 'upstream_error');
      assert.ok(!failed.text.includes(KEY), `the key must not leak: ${failed.text}`);
      await poll(orId);
      const row = await usageOf(orId);
      assert.equal(row.health.status, 'stale');
      assert.equal(row.health.is_stale, true);
      assert.equal(row.health.consecutive_failures, 2);
      assert.ok(row.last_good, 'last-known-good is served while stale');
      assert.equal(row.last_good.status, 'healthy');
      assert.match(row.health.latest_error, /HTTP 500/);
      assert.ok(!JSON.stringify(row).includes(KEY));
      assert.ok(!server.logs.text().includes(KEY), 'the key never reaches the log');
      server.clock.advance(2 * HOUR + 60_000);
      const later = await usageOf(orId);
      assert.equal(later.health.status, 'error');
      assert.equal(later.last_good, null);
      // Recovery: the next success is healthy again and resets the counter.
      mock.forKey(KEY, 'GET', '/key', { body: openrouterKey({ usage_monthly: 12 }) });
      await poll(orId);
      const recovered = await usageOf(orId);
      assert.equal(recovered.health.status, 'healthy');
      assert.equal(recovered.health.consecutive_failures, 0);
    });

    test('disabled connections are skipped by /poll; polling one directly is 409', async () => {
      const disabled = await add({ provider: 'openrouter', api_key: KEY, base_url: mock.url, label: 'Off', is_enabled: false });
      assert.equal((await poll(disabled)).status, 409);
      assert.equal((await poll(987654)).status, 404);
      const all = await api(server, 'POST', '/poll', { token: admin });
      assert.equal(all.status, 200);
      const ids = all.body.map((s: { provider_config_id: number }) => s.provider_config_id);
      assert.ok(ids.includes(orId));
      assert.ok(!ids.includes(disabled));
      const status = await api(server, 'GET', '/poll/status', { token: admin });
      assert.equal(status.body.last_run.trigger, 'manual');
      assert.equal(status.body.last_run.polled, ids.length);
      assert.equal((await usageOf(disabled)).health.status, 'never_connected');
    });

    test('a hanging upstream is aborted at the timeout and recorded as a timeout', async () => {
      const key = 'chaos-hanging-key-0000000';
      mock.forKey(key, 'GET', '/usage', { hang: true });
      const id = await add({ provider: 'chaos', api_key: key, base_url: mock.url, label: 'Hang' });
      const started = Date.now();
      const res = await poll(id);
      assert.equal(res.body.status, 'error');
      assert.equal(res.body.error_code, 'timeout');
      assert.ok(Date.now() - started < 4000, 'aborted near REQUEST_TIMEOUT_SECONDS');
    });

    test('a plugin that throws, spins forever or kills its worker affects only its own poll', async () => {
      const ids = {
        throw: await add({ provider: 'chaos', api_key: CHAOS_KEY, base_url: mock.url, label: 'Throws', extra: { mode: 'throw' } }),
        spin: await add({ provider: 'chaos', api_key: CHAOS_KEY, base_url: mock.url, label: 'Spins', extra: { mode: 'spin' } }),
        exit: await add({ provider: 'chaos', api_key: CHAOS_KEY, base_url: mock.url, label: 'Exits', extra: { mode: 'exit' } }),
        garbage: await add({ provider: 'chaos', api_key: CHAOS_KEY, base_url: mock.url, label: 'Garbage', extra: { mode: 'garbage' } }),
      };
      const polls = Object.entries(ids).map(async ([mode, id]) => [mode, await poll(id)] as const);
      // While a worker spins, the API keeps answering and other polls complete.
      const t0 = Date.now();
      const health = await api(server, 'GET', '/health');
      assert.equal(health.status, 200);
      assert.ok(Date.now() - t0 < 2000, 'the main thread is not blocked by a spinning plugin');
      const good = await poll(orId);
      assert.equal(good.body.status, 'healthy');
      const results = Object.fromEntries(await Promise.all(polls));
      assert.equal(results.throw!.body.error_code, 'upstream_error');
      assert.ok(!results.throw!.text.includes(CHAOS_KEY), 'the thrown message is sanitized');
      assert.equal(results.spin!.body.error_code, 'timeout');
      assert.equal(results.exit!.body.error_code, 'upstream_error');
      assert.match(results.exit!.body.error, /crashed its worker/);
      assert.equal(results.garbage!.body.error_code, 'upstream_error');
      assert.match(results.garbage!.body.error, /invalid result/);
      for (const id of Object.values(ids)) await api(server, 'PATCH', `/configs/${id}`, { token: admin, body: { is_enabled: false } });
      // The pool still works after all that.
      assert.equal((await poll(orId)).body.status, 'healthy');
    });

    test('rotated credentials are stored with the poll, and by a stored-credential test', async () => {
      const id = await add({ provider: 'chaos', api_key: 'rotating-key-000', base_url: mock.url, label: 'Rotates', extra: { mode: 'rotate' } });
      const svc = server.running.services.connections;
      const polled = await poll(id);
      assert.equal(polled.body.status, 'healthy');
      assert.ok(!polled.text.includes('rotating-key-000'), 'neither credential is in the snapshot');
      assert.deepEqual(svc.credentialsOf(await svc.get(id)), { api_key: 'rotating-key-000-next' });
      const tested = await api(server, 'POST', `/configs/${id}/test`, { token: admin });
      assert.equal(tested.status, 200);
      assert.ok(!('rotatedCredentials' in tested.body) && !tested.text.includes('rotating-key'));
      assert.deepEqual(svc.credentialsOf(await svc.get(id)), { api_key: 'rotating-key-000-next-next' }, 'a refreshed single-use token is not thrown away');
      await api(server, 'PATCH', `/configs/${id}`, { token: admin, body: { is_enabled: false } });
    });

    test('deltas: 100 then 140 used gives 40; remaining 5 then 98 (a reset) gives none', async () => {
      const key = 'chaos-delta-key-00000000';
      const id = await add({ provider: 'chaos', api_key: key, base_url: mock.url, label: 'Deltas' });
      mock.forKey(key, 'GET', '/usage', [{ body: credits(100, 5) }, { body: credits(140, 98) }, { body: credits(null, 90) }]);
      await poll(id);
      server.clock.advance(60_000);
      await poll(id);
      const obs = await observations(id);
      const deltas = obs.filter((o) => o.kind === 'delta');
      assert.deepEqual(
        deltas.map((o) => [o.metric, Number(o.value)]),
        [['Credits used', 40]],
      );
      assert.equal(obs.filter((o) => o.kind === 'point').length, 6);
      server.clock.advance(60_000);
      await poll(id);
      const after = await observations(id);
      assert.ok(!after.some((o) => o.metric === 'Credits used' && o.kind === 'point' && Number(o.value) === 0), 'a null reading is a gap, not zero');
      assert.deepEqual(
        after.filter((o) => o.kind === 'delta').map((o) => [o.metric, Number(o.value)]),
        [['Credits used', 40], ['Credits remaining', 8]],
      );
      // A failed poll creates no observations.
      mock.forKey(key, 'GET', '/usage', { status: 503, body: {} });
      server.clock.advance(60_000);
      await poll(id);
      assert.equal((await observations(id)).length, after.length);
    });

    test('native buckets that overlap between polls update in place; older ones survive', async () => {
      const key = 'chaos-native-key-0000000';
      const id = await add({ provider: 'chaos', api_key: key, base_url: mock.url, label: 'Native' });
      const day = (d: string, value: number) => ({ metric: 'Cost', window_start: `2026-11-${d}T00:00:00.000Z`, window_end: `2026-11-${String(Number(d) + 1).padStart(2, '0')}T00:00:00.000Z`, value, unit: 'USD' });
      mock.forKey(key, 'GET', '/usage', [
        { body: credits(1, 99, [day('17', 1.5), day('18', 2.0), day('19', 0.5)]) },
        { body: credits(2, 98, [day('18', 2.0), day('19', 3.25), day('20', 1.0)]) },
      ]);
      await poll(id);
      server.clock.advance(60_000);
      await poll(id);
      const native = (await observations(id)).filter((o) => o.source === 'native');
      const byStart = Object.fromEntries(native.map((o) => [server.running.services.polling.sql.iso(o.window_start)!.slice(0, 10), Number(o.value)]));
      assert.deepEqual(byStart, { '2026-11-17': 1.5, '2026-11-18': 2, '2026-11-19': 3.25, '2026-11-20': 1 });
      assert.equal(native.length, 4, 'no duplicates');
    });

    test('retention removes old snapshots but never a connection latest', async () => {
      const key = 'chaos-retention-key-000000';
      const oldOnly = 'chaos-retention-old-000000';
      mock.forKey(key, 'GET', '/usage', { body: credits(1, 99) });
      mock.forKey(oldOnly, 'GET', '/usage', { body: credits(1, 99) });
      const id = await add({ provider: 'chaos', api_key: key, base_url: mock.url, label: 'Retention' });
      const lonely = await add({ provider: 'chaos', api_key: oldOnly, base_url: mock.url, label: 'Lonely' });
      server.clock.advance(-200 * 24 * HOUR);
      await poll(id);
      await poll(id);
      await poll(lonely);
      server.clock.advance(200 * 24 * HOUR);
      await poll(id);
      const before = (await api(server, 'GET', `/configs/${id}/history?from=2025-06-01T00:00:00Z&to=2027-06-01T00:00:00Z`, { token: admin })).body;
      assert.equal(before.length, 3);
      const removed = await server.running.services.retention.run();
      assert.ok(removed.snapshots >= 2);
      const afterRows = (await api(server, 'GET', `/configs/${id}/history?from=2025-06-01T00:00:00Z&to=2027-06-01T00:00:00Z`, { token: admin })).body;
      assert.equal(afterRows.length, 1);
      const lonelyRows = (await api(server, 'GET', `/configs/${lonely}/history?from=2025-06-01T00:00:00Z&to=2027-06-01T00:00:00Z`, { token: admin })).body;
      assert.equal(lonelyRows.length, 1, "a connection's latest snapshot survives however old");
      assert.equal((await usageOf(lonely)).latest.id, lonelyRows[0].id);
    });

    test('history: bad ranges and limits are 400; tokens need history:read', async () => {
      assert.equal((await api(server, 'GET', `/configs/${orId}/history?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z`, { token: admin })).status, 400);
      assert.equal((await api(server, 'GET', `/configs/${orId}/history?limit=5001`, { token: admin })).status, 400);
      assert.equal((await api(server, 'GET', `/configs/${orId}/history?hours=abc`, { token: admin })).status, 400);
      assert.equal((await api(server, 'GET', `/configs/${orId}/history?from=yesterday`, { token: admin })).status, 400);
      assert.equal((await api(server, 'GET', `/configs/${orId}/history?color=red`, { token: admin })).status, 400);
      assert.equal((await api(server, 'GET', '/configs/99999/history', { token: admin })).status, 404);
      const limited = await api(server, 'GET', `/configs/${orId}/history?limit=2&hours=40000`, { token: admin });
      assert.equal(limited.body.length, 2);
      assert.ok(limited.body[0].checked_at <= limited.body[1].checked_at, 'oldest first');
      const reader = await createToken(server, admin, ['history:read']);
      assert.equal((await api(server, 'GET', `/configs/${orId}/history`, { token: reader })).status, 200);
      const usageOnly = await createToken(server, admin, ['usage:read']);
      assert.equal((await api(server, 'GET', `/configs/${orId}/history`, { token: usageOnly })).status, 403);
    });

    test('/homepage: allowed host without a token; others 401; a token without usage:read 403; rows and flat metrics', async () => {
      const allowed = await withHost(server, '/homepage', 'Dashboard.local:3000');
      assert.equal(allowed.status, 200, allowed.text);
      assert.ok(JSON.parse(allowed.text).configured_providers >= 1);
      assert.equal((await withHost(server, '/homepage', 'evil.example')).status, 401);
      assert.equal((await withHost(server, '/usage', 'dashboard.local')).status, 401, 'the host rule opens /homepage only');
      const wrong = await createToken(server, admin, ['configs:read']);
      assert.equal((await withHost(server, '/homepage', 'evil.example', wrong)).status, 403);
      const reader = await createToken(server, admin, ['usage:read']);
      const res = await api(server, 'GET', '/homepage', { token: reader });
      assert.equal(res.status, 200);
      const body = res.body;
      const enabled = (await api(server, 'GET', '/configs', { token: admin })).body.filter((c: { is_enabled: boolean }) => c.is_enabled);
      assert.equal(body.configured_providers, enabled.length);
      assert.equal(body.list.length, enabled.length);
      const work = body.list.find((l: { config_id: number }) => l.config_id === orId);
      assert.deepEqual(work, { provider: 'openrouter', config_id: orId, label: 'OpenRouter (Work)', value: work.value, status: 'healthy' });
      assert.match(work.value, /\$\d+\.\d\d left/);
      assert.equal(body.metrics.openrouter_work_usage_this_month, 12);
      assert.ok('openrouter_work_limit_remaining' in body.metrics);
      assert.equal(typeof body.summary, 'string');
      assert.ok(body.healthy_providers >= 1 && body.healthy_providers + body.degraded_providers === body.configured_providers);
      assert.ok(Date.parse(body.latest_check) > 0);
    });
  });
}
