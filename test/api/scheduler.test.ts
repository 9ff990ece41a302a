import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { testDatabases } from '../support/databases.js';
import { api, setupAdmin, startTestServer } from '../support/server.js';
import { openrouterKey, startUpstreamMock } from '../support/upstream-mock.js';

const KEY = 'sk-or-v1-scheduler-key-000000000000';
const OFF = 'sk-or-v1-scheduler-off-000000000000';

for (const db of testDatabases()) {
  describe(`scheduler (${db.name})`, () => {
    test('polls enabled connections on its interval; /poll/status reports the last and next poll', async () => {
      const mock = await startUpstreamMock();
      mock.route('GET', '/key', { body: openrouterKey() });
      // 0.05 minutes = 3 seconds between background polls.
      const server = await startTestServer(db, { env: { AUTO_POLL_ENABLED: 'true', AUTO_POLL_INTERVAL_MINUTES: '0.05' } });
      try {
        const admin = await setupAdmin(server);
        const on = (await api(server, 'POST', '/configs', { token: admin, body: { provider: 'openrouter', api_key: KEY, base_url: mock.url, label: 'On' } })).body.id;
        const off = (await api(server, 'POST', '/configs', { token: admin, body: { provider: 'openrouter', api_key: OFF, base_url: mock.url, label: 'Off', is_enabled: false } })).body.id;
        const deadline = Date.now() + 15_000;
        let history: unknown[] = [];
        while (Date.now() < deadline) {
          history = (await api(server, 'GET', `/configs/${on}/history`, { token: admin })).body;
          if (history.length >= 2) break;
          await new Promise((r) => setTimeout(r, 250));
        }
        assert.ok(history.length >= 2, `expected two background polls, got ${history.length}`);
        const [a, b] = history as Array<{ checked_at: string }>;
        const gap = Date.parse(b!.checked_at) - Date.parse(a!.checked_at);
        assert.ok(gap >= 2_500 && gap < 8_000, `polls ~3 s apart, got ${gap} ms`);
        assert.equal(mock.requests('GET', '/key', OFF).length, 0, 'disabled connections are never polled');
        const status = await api(server, 'GET', '/poll/status', { token: admin });
        assert.equal(status.status, 200);
        assert.equal(status.body.auto_poll_enabled, true);
        assert.equal(status.body.interval_seconds, 3);
        assert.equal(status.body.last_run.trigger, 'schedule');
        assert.equal(status.body.last_run.polled, 1);
        assert.ok(status.body.last_polled_at);
        const next = Date.parse(status.body.next_poll_at);
        assert.ok(next >= Date.now() - 1000 && next <= Date.now() + 4_000, `next poll within the interval: ${status.body.next_poll_at}`);
        assert.equal((await api(server, 'GET', `/configs/${off}/history`, { token: admin })).body.length, 0);
      } finally {
        await server.close();
        await mock.close();
      }
    });

    test('a rate-limited connection waits out Retry-After', async () => {
      const mock = await startUpstreamMock();
      mock.sequence('GET', '/key', [{ status: 429, headers: { 'retry-after': '600' }, body: { error: { message: 'slow down' } } }, { body: openrouterKey() }]);
      const server = await startTestServer(db, { env: { AUTO_POLL_ENABLED: 'true', AUTO_POLL_INTERVAL_MINUTES: '0.05' } });
      try {
        const admin = await setupAdmin(server);
        const id = (await api(server, 'POST', '/configs', { token: admin, body: { provider: 'openrouter', api_key: KEY, base_url: mock.url } })).body.id;
        const first = await api(server, 'POST', `/configs/${id}/poll`, { token: admin });
        assert.equal(first.body.error_code, 'rate_limited');
        const again = await api(server, 'POST', `/configs/${id}/poll`, { token: admin });
        assert.equal(again.status, 429, 'an on-demand poll during the back-off is refused');
        assert.ok(Number(again.headers.get('retry-after')) > 500);
        await new Promise((r) => setTimeout(r, 4_000));
        assert.equal(mock.count('GET', '/key'), 1, 'the scheduler did not poll during Retry-After');
        server.clock.advance(601_000);
        const later = await api(server, 'POST', `/configs/${id}/poll`, { token: admin });
        assert.equal(later.body.status, 'healthy');
      } finally {
        await server.close();
        await mock.close();
      }
    });
  });
}
