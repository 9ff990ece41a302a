import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { testDatabases } from '../support/databases.js';
import { api, createToken, setupAdmin, startTestServer } from '../support/server.js';
import { openrouterKey, startUpstreamMock } from '../support/upstream-mock.js';

/** GET /usage and /homepage must not issue a query per connection (no N+1). */
for (const db of testDatabases()) {
  describe(`statement counts (${db.name})`, () => {
    test('the number of SQL statements per request does not depend on the number of connections', async () => {
      const mock = await startUpstreamMock();
      mock.route('GET', '/key', { body: openrouterKey() });
      let statements = 0;
      const server = await startTestServer(db, { onQuery: () => statements++ });
      try {
        const admin = await setupAdmin(server);
        const reader = await createToken(server, admin, ['usage:read']);
        const counts: Record<string, number[]> = { '/usage': [], '/homepage': [] };
        let added = 0;
        for (const target of [3, 12]) {
          for (; added < target; added++) {
            const res = await api(server, 'POST', '/configs', { token: admin, body: { provider: 'openrouter', api_key: `sk-or-v1-stmt-${added}-0000000000`, base_url: mock.url, label: `K${added}`, alert_thresholds: [{ metric: 'Limit remaining', direction: 'decreasing', warning: 10 }] } });
            assert.equal(res.status, 201);
          }
          assert.equal((await api(server, 'POST', '/poll', { token: admin })).status, 200);
          for (const path of Object.keys(counts)) {
            await api(server, 'GET', path, { token: reader }); // warm the token cache
            statements = 0;
            const res = await api(server, 'GET', path, { token: reader });
            assert.equal(res.status, 200);
            counts[path]!.push(statements);
          }
        }
        for (const [path, [small, large]] of Object.entries(counts)) {
          assert.ok(small! >= 1, `${path} ran ${small} statements`);
          assert.equal(large, small, `${path}: ${small} statements for 3 connections, ${large} for 12`);
        }
      } finally {
        await server.close();
        await mock.close();
      }
    });
  });
}
