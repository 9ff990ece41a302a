import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { testDatabases } from '../support/databases.js';
import { api, setupAdmin, startTestServer, type TestServer } from '../support/server.js';

describe('HTTP behaviour: CORS allow-list, request ids, security headers', () => {
  let server: TestServer;
  let admin: string;
  before(async () => {
    server = await startTestServer(testDatabases()[0]!, { env: { CORS_ORIGINS: 'https://dash.example.com' } });
    admin = await setupAdmin(server);
  });
  after(async () => server.close());

  test('an allowed origin gets CORS headers and a preflight answer; others get none', async () => {
    const allowed = await api(server, 'GET', '/configs', { token: admin, headers: { origin: 'https://dash.example.com' } });
    assert.equal(allowed.headers.get('access-control-allow-origin'), 'https://dash.example.com');
    assert.match(allowed.headers.get('vary') ?? '', /Origin/);
    const other = await api(server, 'GET', '/configs', { token: admin, headers: { origin: 'https://evil.example' } });
    assert.equal(other.headers.get('access-control-allow-origin'), null);
    const preflight = await fetch(`${server.url}/api/v1/configs`, {
      method: 'OPTIONS',
      headers: { origin: 'https://dash.example.com', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
    });
    assert.equal(preflight.status, 204);
    assert.match(preflight.headers.get('access-control-allow-headers') ?? '', /Authorization/);
    assert.match(preflight.headers.get('access-control-allow-methods') ?? '', /POST/);
    const refused = await fetch(`${server.url}/api/v1/configs`, { method: 'OPTIONS', headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' } });
    assert.equal(refused.headers.get('access-control-allow-methods'), null);
  });

  test('every response carries a request id (a sane incoming one is kept) and security headers', async () => {
    const res = await api(server, 'GET', '/auth/status', { headers: { 'x-request-id': 'trace-123' } });
    assert.equal(res.headers.get('x-request-id'), 'trace-123');
    const generated = await api(server, 'GET', '/auth/status', { headers: { 'x-request-id': 'bad id with spaces' } });
    assert.match(generated.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(res.headers.get('x-frame-options'), 'DENY');
    const problem = await api(server, 'GET', '/configs');
    assert.equal(problem.body.request_id, problem.headers.get('x-request-id'), 'problems name the request id');
  });

  test('a wrong method on a known path is a 405 problem', async () => {
    const res = await api(server, 'PUT', '/auth/status');
    assert.equal(res.status, 405);
    assert.match(res.headers.get('content-type') ?? '', /problem\+json/);
  });
});
