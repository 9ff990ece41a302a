import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { testDatabases } from '../support/databases.js';
import { api, setupAdmin, startTestServer, type TestServer } from '../support/server.js';
import { openrouterKey, startUpstreamMock, type UpstreamMock } from '../support/upstream-mock.js';

const CHAOS = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'plugin-chaos.mjs');
const HOUR = 3600_000;

/** What the chaos plugin fetches; the whole body becomes the snapshot's raw payload. */
const chaosBody = (used: number, extra: Record<string, unknown> = {}) => ({
  summary: `used ${used} — “ok” ✓`,
  metrics: [
    { label: 'Credits used', value: used, unit: 'credits', maximum: null },
    { label: 'Credits remaining', value: 100 - used, unit: 'credits', maximum: 100 },
    { label: 'Credit limit', value: 100, unit: 'credits', maximum: null },
  ],
  ...extra,
});

const UNICODE = {
  note: 'Grüße, 日本語, emoji 🎉👩🏽‍💻, quote " backslash \\ slash / tab \t newline \n line-sep \u2028 para-sep \u2029 nul-ish \u0001',
  'ключ с пробелом': 'значение',
  '': 'empty key',
  zwj: '\u200d',
};
const NESTED = {
  z_last_key_first: 1,
  a: { b: { c: [1, 2.5, -0.125, 1e21, 12345678.9, null, true, false, '', [], {}, [{ d: { e: [{}] } }]] } },
  empty_object: {},
  empty_array: [],
  big: 9007199254740991,
  small: 1e-7,
};

for (const db of testDatabases()) {
  describe(`GET /usage serialization (${db.name})`, () => {
    let server: TestServer;
    let admin: string;
    let mock: UpstreamMock;
    const ids: Record<string, number> = {};

    const add = async (name: string, body: Record<string, unknown>) => {
      const res = await api(server, 'POST', '/configs', { token: admin, body: { label: name, base_url: mock.url, ...body } });
      assert.equal(res.status, 201, res.text);
      ids[name] = res.body.id as number;
      return ids[name]!;
    };
    const poll = async (id: number) => assert.equal((await api(server, 'POST', `/configs/${id}/poll`, { token: admin })).status, 200);

    /** The route's bytes against JSON.stringify of the objects the service builds at the same moment. */
    const assertSame = async () => {
      const res = await api(server, 'GET', '/usage', { token: admin });
      assert.equal(res.status, 200, res.text);
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
      const expected = JSON.stringify(await server.running.services.usage.usage());
      assert.deepEqual(res.body, JSON.parse(expected));
      // Same JSON value with the same key order everywhere (whitespace inside raw may differ on PostgreSQL).
      assert.equal(JSON.stringify(JSON.parse(res.text)), expected);
      return res.body as Array<{ config: { id: number }; latest: { raw: unknown } | null; last_good: unknown; health: { status: string } }>;
    };

    before(async () => {
      mock = await startUpstreamMock();
      server = await startTestServer(db, {
        env: { PLUGINS: `@usage-monitor/provider-openrouter,${CHAOS}`, REQUEST_TIMEOUT_SECONDS: '2', AUTO_POLL_INTERVAL_MINUTES: '60', WORKER_THREADS: '1' },
      });
      admin = await setupAdmin(server);
    });
    after(async () => {
      await server.close();
      await mock.close();
    });

    test('healthy, stale, error, never connected and disabled rows; unicode, nested and empty raw payloads', async () => {
      const thresholds = [{ metric: 'Credits remaining', direction: 'decreasing', warning: 50, critical: 20 }];
      mock.forKey('chaos-unicode-key-000001', 'GET', '/usage', { body: chaosBody(10, UNICODE) });
      mock.forKey('chaos-nested-key-0000001', 'GET', '/usage', { body: chaosBody(60, NESTED) });
      mock.forKey('chaos-stale-key-00000001', 'GET', '/usage', [{ body: chaosBody(85, { nested: NESTED, unicode: UNICODE }) }, { status: 500, body: { error: 'down' } }]);
      mock.forKey('chaos-error-key-00000001', 'GET', '/usage', { status: 503, body: { error: 'never works' } });
      mock.forKey('chaos-disabled-key-00001', 'GET', '/usage', { body: chaosBody(1, { note: 'polled before it was disabled' }) });
      mock.forKey('sk-or-v1-serialization-key-0001', 'GET', '/key', { body: openrouterKey({ usage_monthly: 11.58, limit: 50, limit_remaining: 38.42 }) });

      await add('Unicode ✓', { provider: 'chaos', api_key: 'chaos-unicode-key-000001', alert_thresholds: thresholds });
      await add('Nested', { provider: 'chaos', api_key: 'chaos-nested-key-0000001', alert_thresholds: thresholds });
      await add('Empty raw', { provider: 'chaos', api_key: 'chaos-rotate-key-0000001', extra: { mode: 'rotate' } });
      await add('Stale', { provider: 'chaos', api_key: 'chaos-stale-key-00000001', alert_thresholds: thresholds });
      await add('Error', { provider: 'chaos', api_key: 'chaos-error-key-00000001' });
      await add('Never', { provider: 'chaos', api_key: 'chaos-never-key-00000001' });
      await add('Disabled', { provider: 'chaos', api_key: 'chaos-disabled-key-00001' });
      await add('OpenRouter', { provider: 'openrouter', api_key: 'sk-or-v1-serialization-key-0001' });

      const empty = await assertSame(); // nothing polled yet
      assert.ok(empty.every((r) => r.health.status === 'never_connected'));

      for (const name of ['Unicode ✓', 'Nested', 'Empty raw', 'Stale', 'Error', 'Disabled', 'OpenRouter']) await poll(ids[name]!);
      await poll(ids['Stale']!); // the second reply fails: latest is an error, last_good the success before
      const disabled = await api(server, 'PATCH', `/configs/${ids['Disabled']}`, { token: admin, body: { is_enabled: false } });
      assert.equal(disabled.status, 200, disabled.text);

      server.clock.advance(90_000);
      const rows = await assertSame();
      const byName = (name: string) => rows.find((r) => r.config.id === ids[name])!;
      assert.equal(byName('Unicode ✓').health.status, 'healthy');
      assert.deepEqual((byName('Unicode ✓').latest!.raw as Record<string, unknown>).note, UNICODE.note);
      assert.deepEqual((byName('Nested').latest!.raw as Record<string, unknown>).a, NESTED.a);
      assert.deepEqual(byName('Empty raw').latest!.raw, {});
      assert.equal(byName('Stale').health.status, 'stale');
      assert.ok(byName('Stale').last_good, 'the stale row carries its last-good snapshot');
      assert.equal(byName('Error').health.status, 'error');
      assert.equal(byName('Never').health.status, 'never_connected');
      assert.equal(byName('Never').latest, null);
      assert.equal(byName('Disabled').health.status, 'healthy');
      assert.equal((await api(server, 'GET', '/usage', { token: admin })).text, (await api(server, 'GET', '/usage', { token: admin })).text, 'a cached read returns the same bytes');

      // Later the stale row turns to error (no last_good); a new poll replaces a cached snapshot.
      server.clock.advance(3 * HOUR);
      mock.forKey('chaos-unicode-key-000001', 'GET', '/usage', { body: chaosBody(95, { note: 'second poll ✓✓', nested: NESTED }) });
      await poll(ids['Unicode ✓']!);
      const later = await assertSame();
      assert.equal(later.find((r) => r.config.id === ids['Stale'])!.health.status, 'error');
      assert.equal((later.find((r) => r.config.id === ids['Unicode ✓'])!.latest!.raw as Record<string, unknown>).note, 'second poll ✓✓');

      // A deleted connection drops out; the rest are still served from what was read before.
      assert.equal((await api(server, 'DELETE', `/configs/${ids['Nested']}`, { token: admin })).status, 204);
      const afterDelete = await assertSame();
      assert.equal(afterDelete.length, Object.keys(ids).length - 1);
    });
  });
}
