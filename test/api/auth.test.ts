import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { testDatabases } from '../support/databases.js';
import { api, setupAdmin, startTestServer, TEST_PASSWORD, type TestServer } from '../support/server.js';

for (const db of testDatabases()) {
  describe(`admin auth (${db.name})`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(db, { env: { LOGIN_MAX_ATTEMPTS: '3', LOGIN_WINDOW_SECONDS: '60' } });
    });
    after(async () => server.close());

    test('a fresh server requires setup and printed a setup code to its log', async () => {
      const res = await api(server, 'GET', '/auth/status');
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, { is_configured: false, setup_required: true });
      assert.match(server.setupCode ?? '', /^[A-Z2-9]{5}(-[A-Z2-9]{5}){3}$/);
      assert.ok(server.logs.text().includes(server.setupCode!), 'the setup code is in the log');
    });

    test('login before setup is a conflict, not a crash', async () => {
      const res = await api(server, 'POST', '/auth/login', { body: { password: TEST_PASSWORD } });
      assert.equal(res.status, 409);
    });

    test('setup rejects a wrong code, a short password and unknown fields, naming the field', async () => {
      const wrong = await api(server, 'POST', '/auth/setup', { body: { code: 'AAAAA-BBBBB-CCCCC-DDDDD', password: TEST_PASSWORD } });
      assert.equal(wrong.status, 400);
      assert.match(wrong.headers.get('content-type') ?? '', /^application\/problem\+json/);
      assert.equal(wrong.body.errors[0].path, '/body/code');
      const short = await api(server, 'POST', '/auth/setup', { body: { code: server.setupCode, password: 'short' } });
      assert.equal(short.status, 400);
      assert.equal(short.body.errors[0].path, '/body/password');
      const unknown = await api(server, 'POST', '/auth/setup', { body: { code: server.setupCode, password: TEST_PASSWORD, admin: true } });
      assert.equal(unknown.status, 400);
      assert.equal(unknown.body.errors[0].path, '/body/admin');
      const tooLong = await api(server, 'POST', '/auth/setup', { body: { code: server.setupCode, password: 'x'.repeat(1025) } });
      assert.equal(tooLong.status, 400);
    });

    test('an expired setup code is rejected; a restart issues a new one', async () => {
      server.clock.advance(31 * 60_000);
      const expired = await api(server, 'POST', '/auth/setup', { body: { code: server.setupCode, password: TEST_PASSWORD } });
      assert.equal(expired.status, 400);
      assert.match(expired.body.detail, /expired/);
      const old = server.setupCode;
      server = await server.restart();
      assert.ok(server.setupCode && server.setupCode !== old);
    });

    let session = '';
    test('setup with the code returns a session; a second setup is 409', async () => {
      session = await setupAdmin(server);
      assert.ok(session.length >= 40);
      assert.deepEqual((await api(server, 'GET', '/auth/status')).body, { is_configured: true, setup_required: false });
      const again = await api(server, 'POST', '/auth/setup', { body: { code: server.setupCode, password: TEST_PASSWORD } });
      assert.equal(again.status, 409);
      assert.ok(!server.logs.text().includes(TEST_PASSWORD), 'the password never reaches the log');
      assert.ok(!server.logs.text().includes(session), 'the session token never reaches the log');
    });

    test('login: wrong password is 401 with WWW-Authenticate; right password gives a working session', async () => {
      const bad = await api(server, 'POST', '/auth/login', { body: { password: 'not the password at all' } });
      assert.equal(bad.status, 401);
      assert.equal(bad.headers.get('www-authenticate'), 'Bearer');
      const ok = await api(server, 'POST', '/auth/login', { body: { password: TEST_PASSWORD } });
      assert.equal(ok.status, 200);
      assert.equal(ok.body.token_type, 'bearer');
      assert.ok(Date.parse(ok.body.expires_at) > Date.now());
      const list = await api(server, 'GET', '/configs', { token: ok.body.access_token });
      assert.equal(list.status, 200);
    });

    test('login is throttled after repeated failures, with Retry-After', async () => {
      for (let i = 0; i < 3; i++) {
        assert.equal((await api(server, 'POST', '/auth/login', { body: { password: 'wrong wrong wrong' } })).status, 401);
      }
      const throttled = await api(server, 'POST', '/auth/login', { body: { password: TEST_PASSWORD } });
      assert.equal(throttled.status, 429);
      assert.ok(Number(throttled.headers.get('retry-after')) > 0);
      server.clock.advance(61_000);
      const after = await api(server, 'POST', '/auth/login', { body: { password: TEST_PASSWORD } });
      assert.equal(after.status, 200);
    });

    test('logout revokes the presented session only', async () => {
      const a = (await api(server, 'POST', '/auth/login', { body: { password: TEST_PASSWORD } })).body.access_token;
      const b = (await api(server, 'POST', '/auth/login', { body: { password: TEST_PASSWORD } })).body.access_token;
      assert.equal((await api(server, 'POST', '/auth/logout', { token: a })).status, 204);
      const revoked = await api(server, 'GET', '/configs', { token: a });
      assert.equal(revoked.status, 401);
      assert.equal(revoked.headers.get('www-authenticate'), 'Bearer');
      assert.equal((await api(server, 'GET', '/configs', { token: b })).status, 200);
      assert.equal((await api(server, 'POST', '/auth/logout')).status, 401);
    });

    test('a session expires after ADMIN_SESSION_EXPIRE_HOURS', async () => {
      const s = (await api(server, 'POST', '/auth/login', { body: { password: TEST_PASSWORD } })).body.access_token;
      server.clock.advance(23 * 3600_000);
      assert.equal((await api(server, 'GET', '/configs', { token: s })).status, 200);
      server.clock.advance(2 * 3600_000);
      const expired = await api(server, 'GET', '/configs', { token: s });
      assert.equal(expired.status, 401);
      assert.match(expired.body.detail, /expired/);
    });

    test('malformed and unknown bearer tokens are 401', async () => {
      assert.equal((await api(server, 'GET', '/configs', { headers: { authorization: 'Basic abc' } })).status, 401);
      assert.equal((await api(server, 'GET', '/configs', { token: 'not-a-real-session-token' })).status, 401);
      assert.equal((await api(server, 'GET', '/configs', { token: 'udt_unknowntokenvalue000000000000' })).status, 401);
    });

    test('reset: the code goes to the log; completing it revokes every older session', async () => {
      const older = (await api(server, 'POST', '/auth/login', { body: { password: TEST_PASSWORD } })).body.access_token;
      const before = server.logs.lines.length;
      assert.equal((await api(server, 'POST', '/auth/reset/request')).status, 202);
      const line = server.logs.lines.slice(before).find((l) => l.includes('reset code'));
      const code = /reset code: ([A-Z2-9-]+)/.exec(line ?? '')?.[1];
      assert.ok(code, 'the reset code was logged');
      const wrong = await api(server, 'POST', '/auth/reset/complete', { body: { code: 'WRONG-CODE1-23456-78922', password: 'a brand new password' } });
      assert.equal(wrong.status, 400);
      const done = await api(server, 'POST', '/auth/reset/complete', { body: { code: code.toLowerCase(), password: 'a brand new password' } });
      assert.equal(done.status, 200);
      assert.equal((await api(server, 'GET', '/configs', { token: older })).status, 401);
      assert.equal((await api(server, 'GET', '/configs', { token: done.body.access_token })).status, 200);
      assert.equal((await api(server, 'POST', '/auth/login', { body: { password: TEST_PASSWORD } })).status, 401);
      assert.equal((await api(server, 'POST', '/auth/login', { body: { password: 'a brand new password' } })).status, 200);
      const reuse = await api(server, 'POST', '/auth/reset/complete', { body: { code, password: 'another new password' } });
      assert.equal(reuse.status, 400, 'a reset code works once');
    });
  });
}
