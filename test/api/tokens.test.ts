import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { testDatabases } from '../support/databases.js';
import { api, createToken, setupAdmin, startTestServer, TEST_PASSWORD, type TestServer } from '../support/server.js';

const SCOPES = ['configs:read', 'history:read', 'poll:write', 'usage:read', 'analytics:read', 'datasources:read'];

for (const db of testDatabases()) {
  describe(`API tokens and access (${db.name})`, () => {
    let server: TestServer;
    let admin: string;
    before(async () => {
      server = await startTestServer(db);
      admin = await setupAdmin(server);
    });
    after(async () => server.close());

    test('creation returns the udt_ plaintext once; the list never shows it again', async () => {
      const created = await api(server, 'POST', '/api-tokens', {
        token: admin,
        body: { name: '  homepage widget  ', scopes: ['usage:read', 'configs:read', 'usage:read'] },
      });
      assert.equal(created.status, 201);
      const plaintext: string = created.body.token;
      assert.match(plaintext, /^udt_[A-Za-z0-9_-]{43}$/);
      assert.equal(created.body.name, 'homepage widget');
      assert.deepEqual(created.body.scopes, ['configs:read', 'usage:read'], 'deduplicated and sorted');
      assert.equal(created.body.state, 'active');
      assert.equal(created.body.id, created.body.token_id);
      assert.ok(plaintext.startsWith(created.body.token_prefix));
      const list = await api(server, 'GET', '/api-tokens', { token: admin });
      assert.equal(list.status, 200);
      assert.ok(!list.text.includes(plaintext), 'the list never carries the plaintext');
      assert.ok(!list.body.some((t: Record<string, unknown>) => 'token' in t));
      assert.ok(!server.logs.text().includes(plaintext), 'the plaintext never reaches the log');
      const used = await api(server, 'GET', '/configs', { token: plaintext });
      assert.equal(used.status, 200);
      const after = (await api(server, 'GET', '/api-tokens', { token: admin })).body.find((t: { id: number }) => t.id === created.body.id);
      assert.ok(after.last_used_at, 'last use is recorded');
    });

    test('bad token input is a 400 naming the field', async () => {
      const cases: Array<[unknown, string]> = [
        [{ name: 'x', scopes: [] }, '/body/scopes'],
        [{ name: 'x', scopes: ['admin'] }, '/body/scopes/0'],
        [{ name: '   ', scopes: ['usage:read'] }, '/body/name'],
        [{ name: 'x'.repeat(121), scopes: ['usage:read'] }, '/body/name'],
        [{ name: 'x', scopes: ['usage:read'], expires_at: '2001-01-01T00:00:00Z' }, '/body/expires_at'],
        [{ name: 'x', scopes: ['usage:read'], expires_at: 'tomorrow' }, '/body/expires_at'],
        [{ name: 'x', scopes: 'usage:read' }, '/body/scopes'],
        [{ name: 'x', scopes: ['usage:read'], role: 'admin' }, '/body/role'],
        [{ scopes: ['usage:read'] }, '/body/name'],
      ];
      for (const [body, path] of cases) {
        const res = await api(server, 'POST', '/api-tokens', { token: admin, body });
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.ok(res.body.errors.some((e: { path: string }) => e.path === path), `${JSON.stringify(body)} -> ${res.text}`);
      }
    });

    test('revoke is idempotent and the revoked token gets 401', async () => {
      const res = await api(server, 'POST', '/api-tokens', { token: admin, body: { name: 'script', scopes: ['configs:read'] } });
      const { id, token } = res.body;
      assert.equal((await api(server, 'POST', `/api-tokens/${id}/revoke`, { token: admin })).status, 204);
      assert.equal((await api(server, 'POST', `/api-tokens/${id}/revoke`, { token: admin })).status, 204);
      const rejected = await api(server, 'GET', '/configs', { token });
      assert.equal(rejected.status, 401);
      assert.match(rejected.body.detail, /revoked/);
      const rec = (await api(server, 'GET', '/api-tokens', { token: admin })).body.find((t: { id: number }) => t.id === id);
      assert.equal(rec.state, 'revoked');
      assert.ok(rec.revoked_at);
      assert.equal((await api(server, 'POST', '/api-tokens/999999/revoke', { token: admin })).status, 404);
      assert.equal((await api(server, 'POST', '/api-tokens/abc/revoke', { token: admin })).status, 400);
    });

    test('an expired token gets 401 and is listed as expired', async () => {
      const expiresAt = new Date(server.clock.now().getTime() + 3600_000).toISOString();
      const res = await api(server, 'POST', '/api-tokens', { token: admin, body: { name: 'short-lived', scopes: ['configs:read'], expires_at: expiresAt } });
      assert.equal((await api(server, 'GET', '/configs', { token: res.body.token })).status, 200);
      server.clock.advance(3601_000);
      const rejected = await api(server, 'GET', '/configs', { token: res.body.token });
      assert.equal(rejected.status, 401);
      assert.match(rejected.body.detail, /expired/);
      const rec = (await api(server, 'GET', '/api-tokens', { token: admin })).body.find((t: { id: number }) => t.id === res.body.id);
      assert.equal(rec.state, 'expired');
    });

    test('the full scope matrix: every scope against every route', async () => {
      const tokens: Record<string, string> = {};
      for (const scope of SCOPES) tokens[scope] = await createToken(server, admin, [scope]);
      const routes = server.running.bundle.routes;
      assert.ok(routes.length >= 15);
      for (const route of routes) {
        const path = route.path.replace(/\{[^}]+\}/g, '987654');
        const method = route.method.toUpperCase();
        for (const scope of SCOPES) {
          const res = await api(server, method, path, { token: tokens[scope], body: route.body ? {} : undefined });
          const label = `${method} ${route.path} with ${scope}`;
          if (route.access === 'public') {
            assert.ok(![401, 403].includes(res.status), `${label}: public route answered ${res.status}`);
          } else if (route.access === 'admin') {
            assert.equal(res.status, 403, `${label}: admin-only route must refuse tokens`);
          } else {
            const needed = route.access === 'homepage' ? 'usage:read' : route.access.scope;
            if (scope === needed) assert.ok(![401, 403].includes(res.status), `${label}: allowed scope got ${res.status}`);
            else assert.equal(res.status, 403, `${label}: wrong scope must be 403`);
          }
        }
        // Without any token: public passes, everything else is 401 (homepage from a non-allowed host too).
        const anon = await api(server, method, path, { body: route.body ? {} : undefined });
        if (route.access === 'public') assert.ok(anon.status !== 401 && anon.status !== 403, `${method} ${route.path} anonymous`);
        else assert.equal(anon.status, 401, `${method} ${route.path} anonymous must be 401`);
        // An admin session passes every route.
        // (logout would end the shared session, so it gets a session of its own)
        const session = route.operationId === 'logout' ? (await api(server, 'POST', '/auth/login', { body: { password: TEST_PASSWORD } })).body.access_token : admin;
        const asAdmin = await api(server, method, path, { token: session, body: route.body ? {} : undefined });
        assert.ok(![401, 403].includes(asAdmin.status), `${method} ${route.path} as admin got ${asAdmin.status}`);
      }
    });
  });
}
