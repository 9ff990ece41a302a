import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { testDatabases } from '../support/databases.js';
import { api, createToken, setupAdmin, startTestServer, type TestServer } from '../support/server.js';

const KEY = 'sk-or-v1-secret-test-key-0123456789abcdef';
const MGMT = 'sk-or-v1-management-key-fedcba9876543210';

/** A minimal OpenRouter-shaped upstream: /key answers by the presented key. */
async function startUpstream() {
  const server = http.createServer((req, res) => {
    const auth = req.headers.authorization;
    if (req.url === '/api/v1/key' && auth === `Bearer ${KEY}`) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ data: { label: 'sk-or-v1-abc...def', limit: 50, limit_remaining: 38.42, limit_reset: 'monthly', usage: 211.58, usage_daily: 0.87, usage_weekly: 4.1, usage_monthly: 11.58, is_free_tier: false, expires_at: null } }));
      return;
    }
    res.writeHead(401, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { code: 401, message: `User not found for ${auth}` } }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`, close: () => new Promise((r) => server.close(r)) };
}

for (const db of testDatabases()) {
  describe(`connections (${db.name})`, () => {
    let server: TestServer;
    let admin: string;
    let upstream: Awaited<ReturnType<typeof startUpstream>>;
    before(async () => {
      upstream = await startUpstream();
      server = await startTestServer(db);
      admin = await setupAdmin(server);
    });
    after(async () => {
      await server.close();
      await upstream.close();
    });

    test('GET /providers lists the OpenRouter plugin with its schemas and metric specs', async () => {
      const res = await api(server, 'GET', '/providers');
      assert.equal(res.status, 200);
      const or = res.body.find((p: { id: string }) => p.id === 'openrouter');
      assert.ok(or);
      assert.equal(or.auth.kind, 'api_key');
      assert.deepEqual(or.credentials_schema.required, ['api_key']);
      assert.equal(or.credentials_schema.properties.api_key.writeOnly, true);
      assert.equal(or.metric_specs['Usage this month'].type, 'counter');
      assert.ok(or.metrics.includes('Limit remaining'));
      assert.ok(or.alert_metrics.every((m: { unit: string }) => m.unit !== 'datetime'));
    });

    let first: number;
    let second: number;
    test('create: credentials are validated, encrypted and never returned', async () => {
      const res = await api(server, 'POST', '/configs', {
        token: admin,
        body: { provider: 'openrouter', api_key: KEY, base_url: upstream.url, alert_thresholds: [{ metric: 'Limit remaining', direction: 'decreasing', warning: 10, critical: 5 }] },
      });
      assert.equal(res.status, 201, res.text);
      assert.equal(res.body.label, 'OpenRouter', 'a blank label becomes the provider name');
      assert.equal(res.body.api_key_masked, '••••••••');
      assert.equal(res.body.available, true);
      assert.equal(res.body.is_enabled, true);
      assert.ok(!res.text.includes(KEY));
      first = res.body.id;
      const again = await api(server, 'POST', '/configs', { token: admin, body: { provider: 'openrouter', credentials: { api_key: KEY, management_key: MGMT }, label: '' } });
      assert.equal(again.status, 201);
      assert.equal(again.body.label, 'OpenRouter 2', 'default labels stay unique');
      second = again.body.id;
      const list = await api(server, 'GET', '/configs', { token: admin });
      assert.equal(list.body.length, 2);
      assert.ok(!list.text.includes(KEY) && !list.text.includes(MGMT));
      assert.ok(!server.logs.text().includes(KEY) && !server.logs.text().includes(MGMT), 'credentials never reach the log');
    });

    test('credentials are encrypted at rest', async () => {
      const rows = (await server.running.services.db.em().getConnection().execute('select credentials from connection')) as Array<{ credentials: string }>;
      assert.equal(rows.length, 2);
      for (const r of rows) {
        assert.match(r.credentials, /^v1\./);
        assert.ok(!r.credentials.includes(KEY));
      }
    });

    test('a duplicate label is 409; labels are per provider', async () => {
      const res = await api(server, 'POST', '/configs', { token: admin, body: { provider: 'openrouter', api_key: KEY, label: 'OpenRouter' } });
      assert.equal(res.status, 409);
      const rename = await api(server, 'PATCH', `/configs/${second}`, { token: admin, body: { label: 'OpenRouter' } });
      assert.equal(rename.status, 409);
    });

    test('bad input is a 400 problem naming the field', async () => {
      const cases: Array<[unknown, string]> = [
        [{ provider: 'nope', api_key: KEY }, '/body/provider'],
        [{ provider: 'openrouter' }, '/body/credentials/api_key'],
        [{ provider: 'openrouter', api_key: 'short' }, '/body/credentials/api_key'],
        [{ provider: 'openrouter', api_key: 12345678901 }, '/body/api_key'],
        [{ provider: 'openrouter', api_key: KEY, is_enabled: 'yes' }, '/body/is_enabled'],
        [{ provider: 'openrouter', api_key: KEY, label: 'x'.repeat(121) }, '/body/label'],
        [{ provider: 'openrouter', api_key: KEY, base_url: 'ftp://example.com' }, '/body/base_url'],
        [{ provider: 'openrouter', api_key: KEY, colour: 'red' }, '/body/colour'],
        [{ provider: 'openrouter', credentials: { api_key: KEY, extra_field: 1 } }, '/body/credentials/extra_field'],
        [{ provider: 'openrouter', api_key: KEY, extra: { region: 'eu' } }, '/body/extra/region'],
        [{ provider: 'openrouter', api_key: KEY, display_order: -1 }, '/body/display_order'],
        [{ provider: 'openrouter', api_key: KEY, alert_thresholds: [{ metric: 'Limit remaining', direction: 'decreasing' }] }, '/body/alert_thresholds/0/warning'],
        [{ provider: 'openrouter', api_key: KEY, alert_thresholds: [{ metric: 'Nope', direction: 'decreasing', warning: 1 }] }, '/body/alert_thresholds/0/metric'],
        [{ provider: 'openrouter', api_key: KEY, alert_thresholds: [{ metric: 'Limit', direction: 'sideways', warning: 1 }] }, '/body/alert_thresholds/0/direction'],
      ];
      for (const [body, path] of cases) {
        const res = await api(server, 'POST', '/configs', { token: admin, body });
        assert.equal(res.status, 400, `${JSON.stringify(body)} -> ${res.status} ${res.text}`);
        assert.match(res.headers.get('content-type') ?? '', /application\/problem\+json/);
        assert.ok(res.body.errors.some((e: { path: string }) => e.path === path), `${JSON.stringify(body)} expected ${path}, got ${res.text}`);
        assert.ok(!res.text.includes(KEY), 'errors never echo the credential');
      }
      assert.equal((await api(server, 'GET', '/configs', { token: admin })).body.length, 2, 'nothing was saved');
    });

    test('ugly bodies: non-JSON, malformed JSON, a 2 MB body, an array, empty PATCH', async () => {
      const text = await api(server, 'POST', '/configs', { token: admin, rawBody: 'provider=openrouter', headers: { 'content-type': 'text/plain' } });
      assert.equal(text.status, 415);
      assert.match(text.headers.get('content-type') ?? '', /problem\+json/);
      const malformed = await api(server, 'POST', '/configs', { token: admin, rawBody: '{"provider": "openrouter",', headers: { 'content-type': 'application/json' } });
      assert.equal(malformed.status, 400);
      assert.equal(malformed.body.errors[0].path, '/body');
      const huge = await api(server, 'POST', '/configs', { token: admin, body: { provider: 'openrouter', api_key: KEY, label: 'x', extra: { blob: 'y'.repeat(2 * 1024 * 1024) } } });
      assert.equal(huge.status, 413);
      assert.match(huge.headers.get('content-type') ?? '', /problem\+json/);
      const array = await api(server, 'POST', '/configs', { token: admin, body: [{ provider: 'openrouter' }] });
      assert.equal(array.status, 400);
      const empty = await api(server, 'PATCH', `/configs/${first}`, { token: admin, body: {} });
      assert.equal(empty.status, 400);
      const badId = await api(server, 'PATCH', '/configs/abc', { token: admin, body: { label: 'x' } });
      assert.equal(badId.status, 400);
      assert.equal(badId.body.errors[0].path, '/params/id');
      const missing = await api(server, 'PATCH', '/configs/424242', { token: admin, body: { label: 'x' } });
      assert.equal(missing.status, 404);
      const unknownRoute = await api(server, 'GET', '/nothing-here', { token: admin });
      assert.equal(unknownRoute.status, 404);
      assert.match(unknownRoute.headers.get('content-type') ?? '', /problem\+json/);
    });

    test('update keeps omitted credentials; a lone api_key replaces only that field', async () => {
      const res = await api(server, 'PATCH', `/configs/${first}`, { token: admin, body: { label: 'Work key', is_visible: false, extra: {} } });
      assert.equal(res.status, 200);
      assert.equal(res.body.label, 'Work key');
      assert.equal(res.body.is_visible, false);
      const tested = await api(server, 'POST', `/configs/${first}/test`, { token: admin });
      assert.equal(tested.status, 200, tested.text);
      const rotated = await api(server, 'PATCH', `/configs/${second}`, { token: admin, body: { api_key: 'sk-or-v1-a-different-key-000000' } });
      assert.equal(rotated.status, 200);
      const stored = server.running.services.connections;
      const creds = stored.credentialsOf(await stored.get(second));
      assert.deepEqual(creds, { api_key: 'sk-or-v1-a-different-key-000000', management_key: MGMT });
    });

    test('test endpoints: live upstream result, nothing saved; upstream auth failure is 502 without the key', async () => {
      const ok = await api(server, 'POST', '/configs/test', { token: admin, body: { provider: 'openrouter', api_key: KEY, base_url: upstream.url } });
      assert.equal(ok.status, 200, ok.text);
      assert.equal(ok.body.status, 'healthy');
      const month = ok.body.metrics.find((m: { label: string }) => m.label === 'Usage this month');
      assert.deepEqual(month, { label: 'Usage this month', value: 11.58, unit: 'USD', maximum: null });
      assert.ok(!ok.text.includes(KEY));
      const denied = await api(server, 'POST', '/configs/test', { token: admin, body: { provider: 'openrouter', api_key: 'sk-or-v1-wrong-key-1234567890', base_url: upstream.url } });
      assert.equal(denied.status, 502);
      assert.equal(denied.body.code, 'auth_error');
      assert.ok(!denied.text.includes('sk-or-v1-wrong-key-1234567890'), `the key must not be echoed: ${denied.text}`);
      const unreachable = await api(server, 'POST', '/configs/test', { token: admin, body: { provider: 'openrouter', api_key: KEY, base_url: 'http://127.0.0.1:1' } });
      assert.equal(unreachable.status, 502);
      assert.equal(unreachable.body.code, 'upstream_error');
      assert.equal((await api(server, 'GET', '/configs', { token: admin })).body.length, 2, 'tests save nothing');
    });

    test('ordering: listed ids first in the given order, the rest after; unknown ids are 400', async () => {
      const third = (await api(server, 'POST', '/configs', { token: admin, body: { provider: 'openrouter', api_key: KEY, label: 'Third' } })).body.id;
      const res = await api(server, 'PATCH', '/configs/order', { token: admin, body: { config_ids: [third, first] } });
      assert.equal(res.status, 200);
      assert.deepEqual(res.body.map((c: { id: number }) => c.id), [third, first, second]);
      assert.deepEqual(res.body.map((c: { display_order: number }) => c.display_order), [0, 1, 2]);
      const list = await api(server, 'GET', '/configs', { token: admin });
      assert.deepEqual(list.body.map((c: { id: number }) => c.id), [third, first, second]);
      const bad = await api(server, 'PATCH', '/configs/order', { token: admin, body: { config_ids: [third, 99999] } });
      assert.equal(bad.status, 400);
      const dup = await api(server, 'PATCH', '/configs/order', { token: admin, body: { config_ids: [third, third] } });
      assert.equal(dup.status, 400);
    });

    test('a configs:read token lists but cannot change; delete removes the connection', async () => {
      const reader = await createToken(server, admin, ['configs:read']);
      assert.equal((await api(server, 'GET', '/configs', { token: reader })).status, 200);
      assert.equal((await api(server, 'DELETE', `/configs/${second}`, { token: reader })).status, 403);
      assert.equal((await api(server, 'DELETE', `/configs/${second}`, { token: admin })).status, 204);
      assert.equal((await api(server, 'DELETE', `/configs/${second}`, { token: admin })).status, 404);
      const ids = (await api(server, 'GET', '/configs', { token: admin })).body.map((c: { id: number }) => c.id);
      assert.ok(!ids.includes(second));
    });
  });
}
