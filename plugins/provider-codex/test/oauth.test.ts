import { createHash } from 'node:crypto';
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHttpClient, UpstreamError, type OAuthBrowserFlow, type OAuthContext, type OAuthDeviceFlow } from '@usage-monitor/core';
import { startFixtureServer, type FixtureEntry, type FixtureServer } from '@usage-monitor/core/testing';
import plugin from '../src/index.js';

const CLIENT_ID = 'app_EMoamEEZ73f0CkXaXp7hrann';
const NOW = new Date('2026-08-29T07:53:20Z');
const NOW_S = NOW.getTime() / 1000;

const jwt = (payload: Record<string, unknown>, sig: string) =>
  [Buffer.from('{"alg":"RS256","typ":"JWT"}').toString('base64url'), Buffer.from(JSON.stringify(payload)).toString('base64url'), sig].join('.');
const ACCESS = jwt({ exp: NOW_S + 864000, 'https://api.openai.com/auth': { chatgpt_account_id: 'acct-oauth-test-0001' } }, 'sig-access-not-real');
const ID_TOKEN = jwt({ email: 'dev@example.test', 'https://api.openai.com/auth': { chatgpt_account_id: 'acct-oauth-test-0001' } }, 'sig-id-not-real');
const TOKENS = { id_token: ID_TOKEN, access_token: ACCESS, refresh_token: 'codex-oauth-test-refresh-0001' };
const EXPECTED_CREDENTIALS = {
  access_token: ACCESS,
  refresh_token: 'codex-oauth-test-refresh-0001',
  id_token: ID_TOKEN,
  account_id: 'acct-oauth-test-0001',
  expires_at: (NOW_S + 864000) * 1000,
};

const auth = plugin.auth;
assert.ok(auth?.kind === 'oauth' && auth.device && auth.browser, 'codex declares both OAuth flows');
const device: OAuthDeviceFlow = auth.device;
const browser: OAuthBrowserFlow = auth.browser;

const servers: FixtureServer[] = [];
after(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

async function setup(entries: FixtureEntry[], now: Date = NOW): Promise<{ server: FixtureServer; ctx: OAuthContext }> {
  const server = await startFixtureServer(entries);
  servers.push(server);
  const ctx: OAuthContext = {
    settings: { auth_base_url: server.url },
    baseUrl: 'https://chatgpt.com/backend-api',
    http: createHttpClient({ timeoutMs: 2000 }),
    clock: { now: () => new Date(now) },
    signal: new AbortController().signal,
    logger: { debug() {}, info() {}, warn() {}, error() {} },
  };
  return { server, ctx };
}

const done = (server: FixtureServer) => {
  assert.deepEqual(server.unmatched.map((u) => `${u.method} ${u.path}: ${u.reason}`), []);
  assert.deepEqual(server.unused().filter((e) => !e.optional).map((e) => e.name), []);
};

const deviceState = { device_auth_id: 'deviceauth_test_0001', user_code: 'WXYZ-1234', interval: 5, expires_at: new Date(NOW.getTime() + 900_000).toISOString() };
const pollRequest = { method: 'POST', path: '/api/accounts/deviceauth/token', body: { device_auth_id: 'deviceauth_test_0001', user_code: 'WXYZ-1234' } };

describe('codex device flow (ChatGPT deviceauth endpoints)', () => {
  test('start asks for a user code with the client id and returns the verification page', async () => {
    const { server, ctx } = await setup([
      {
        name: 'usercode',
        request: { method: 'POST', path: '/api/accounts/deviceauth/usercode', headers: { 'content-type': 'application/json' }, body: { client_id: CLIENT_ID } },
        // `interval` is a string of seconds in the real response.
        response: { status: 200, body: { device_auth_id: 'deviceauth_test_0001', user_code: 'WXYZ-1234', interval: '7' } },
      },
    ]);
    const start = await device.start(ctx);
    assert.equal(start.user_code, 'WXYZ-1234');
    assert.equal(start.verification_uri, `${server.url}/codex/device`);
    assert.equal(start.interval_seconds, 7);
    assert.equal(start.expires_in_seconds, 900);
    assert.deepEqual(start.state, { device_auth_id: 'deviceauth_test_0001', user_code: 'WXYZ-1234', interval: 7, expires_at: '2026-08-29T08:08:20.000Z' });
    done(server);
  });

  test('start accepts the "usercode" alias', async () => {
    const { server, ctx } = await setup([
      { name: 'usercode', request: { method: 'POST', path: '/api/accounts/deviceauth/usercode' }, response: { body: { device_auth_id: 'deviceauth_test_0002', usercode: 'ALIAS-0002', interval: '5' } } },
    ]);
    const start = await device.start(ctx);
    assert.equal(start.user_code, 'ALIAS-0002');
    done(server);
  });

  test('start reports a 404 as "device login not enabled"', async () => {
    const { server, ctx } = await setup([
      { name: 'usercode-404', request: { method: 'POST', path: '/api/accounts/deviceauth/usercode' }, response: { status: 404, body: { detail: 'Not Found' } } },
    ]);
    await assert.rejects(device.start(ctx), (err: unknown) => err instanceof UpstreamError && /not enabled/.test(err.message));
    done(server);
  });

  test('poll is pending while the token endpoint answers 403 or 404', async () => {
    const { server, ctx } = await setup([
      { name: 'pending-403', request: pollRequest, response: { status: 403, body: { error: { message: 'Device authorization is pending' } } } },
      { name: 'pending-404', request: pollRequest, response: { status: 404, body: { detail: 'Not Found' } } },
    ]);
    assert.deepEqual(await device.poll(ctx, deviceState), { status: 'pending', interval_seconds: 5 });
    assert.deepEqual(await device.poll(ctx, deviceState), { status: 'pending', interval_seconds: 5 });
    done(server);
  });

  test('poll slows down on 429', async () => {
    const { server, ctx } = await setup([{ name: 'slow', request: pollRequest, response: { status: 429, body: { detail: 'Too many requests' } } }]);
    assert.deepEqual(await device.poll(ctx, deviceState), { status: 'slow_down', interval_seconds: 10 });
    done(server);
  });

  test('poll completes: the authorization code is exchanged with the returned verifier', async () => {
    const { server, ctx } = await setup([
      {
        name: 'authorized',
        request: pollRequest,
        response: { body: { authorization_code: 'authcode-device-test-0001', code_challenge: 'challenge-device-test-0001', code_verifier: 'verifier-device-test-0001' } },
      },
      {
        name: 'exchange',
        request: {
          method: 'POST',
          path: '/oauth/token',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: {
            grant_type: 'authorization_code',
            code: 'authcode-device-test-0001',
            redirect_uri: '{{base_url}}/deviceauth/callback',
            client_id: CLIENT_ID,
            code_verifier: 'verifier-device-test-0001',
          },
        },
        response: { body: { ...TOKENS, expires_in: 864000 } },
      },
    ]);
    const result = await device.poll(ctx, deviceState);
    assert.deepEqual(result, { status: 'complete', credentials: EXPECTED_CREDENTIALS });
    done(server);
  });

  test('poll reports expired once the code outlived its 15 minutes, without asking upstream', async () => {
    const { server, ctx } = await setup([], new Date(NOW.getTime() + 901_000));
    const result = await device.poll(ctx, deviceState);
    assert.equal(result.status, 'expired');
    assert.equal(server.requests.length, 0);
  });

  test('poll reports expired when upstream says the code expired', async () => {
    // The real error body is not documented; the plugin looks for "expired" in the error code.
    const { server, ctx } = await setup([
      { name: 'expired', request: pollRequest, response: { status: 410, body: { error: { code: 'device_code_expired', message: 'expired' } } } },
    ]);
    assert.equal((await device.poll(ctx, deviceState)).status, 'expired');
    done(server);
  });

  test('poll reports denied when the user refused', async () => {
    // The real error body is not documented; the plugin looks for "denied" in the error code.
    const { server, ctx } = await setup([{ name: 'denied', request: pollRequest, response: { status: 400, body: { error: 'access_denied' } } }]);
    assert.deepEqual(await device.poll(ctx, deviceState), { status: 'denied', error: 'The sign-in was denied' });
    done(server);
  });

  test('poll reports an error when the code exchange is refused', async () => {
    const { server, ctx } = await setup([
      { name: 'authorized', request: pollRequest, response: { body: { authorization_code: 'authcode-device-test-0002', code_challenge: 'c', code_verifier: 'verifier-device-test-0002' } } },
      { name: 'exchange', request: { method: 'POST', path: '/oauth/token' }, response: { status: 400, body: { error: 'invalid_grant', error_description: 'Invalid authorization code' } } },
    ]);
    const result = await device.poll(ctx, deviceState);
    assert.equal(result.status, 'error');
    assert.match(result.error ?? '', /HTTP 400: invalid_grant/);
    assert.doesNotMatch(result.error ?? '', /authcode-device-test-0002|verifier-device-test-0002/);
    done(server);
  });
});

describe('codex browser flow (authorization code + PKCE, pasted callback)', () => {
  test('start builds the authorization URL with an S256 challenge of the kept verifier and a random state', async () => {
    const { server, ctx } = await setup([]);
    const start = await browser.start(ctx);
    const u = new URL(start.authorization_url);
    assert.equal(`${u.origin}${u.pathname}`, `${server.url}/oauth/authorize`);
    const q = u.searchParams;
    assert.equal(q.get('response_type'), 'code');
    assert.equal(q.get('client_id'), CLIENT_ID);
    assert.equal(q.get('redirect_uri'), 'http://localhost:1455/auth/callback');
    assert.equal(q.get('scope'), 'openid profile email offline_access');
    assert.equal(q.get('code_challenge_method'), 'S256');
    assert.equal(q.get('id_token_add_organizations'), 'true');
    assert.equal(q.get('codex_cli_simplified_flow'), 'true');
    assert.doesNotMatch(start.authorization_url, /\+/, 'spaces are encoded as %20');
    const verifier = start.state.code_verifier as string;
    assert.match(verifier, /^[A-Za-z0-9_-]{43,128}$/, 'an RFC 7636 verifier');
    assert.equal(q.get('code_challenge'), createHash('sha256').update(verifier).digest('base64url'));
    assert.equal(q.get('state'), start.state.state);
    assert.ok((start.state.state as string).length >= 32);
    assert.equal(q.get('code_verifier'), null, 'the verifier never leaves the server');
    assert.equal(start.redirect_uri, 'http://localhost:1455/auth/callback');
    assert.equal(start.expires_in_seconds, 600);
    const again = await browser.start(ctx);
    assert.notEqual(again.state.state, start.state.state);
    assert.notEqual(again.state.code_verifier, start.state.code_verifier);
    assert.equal(server.requests.length, 0);
  });

  test('complete exchanges the code from the pasted callback URL with the verifier', async () => {
    const { server, ctx } = await setup([]);
    const start = await browser.start(ctx);
    await server.close();
    const { server: s2, ctx: ctx2 } = await setup([
      {
        name: 'exchange',
        request: {
          method: 'POST',
          path: '/oauth/token',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: {
            grant_type: 'authorization_code',
            code: 'authcode-browser-test-0001',
            redirect_uri: 'http://localhost:1455/auth/callback',
            client_id: CLIENT_ID,
            code_verifier: start.state.code_verifier as string,
          },
        },
        response: { body: TOKENS },
      },
    ]);
    const callback = `http://localhost:1455/auth/callback?code=authcode-browser-test-0001&scope=openid+profile+email+offline_access&state=${encodeURIComponent(start.state.state as string)}`;
    const result = await browser.complete(ctx2, start.state, callback);
    // Without expires_in, the expiry comes from the access token's exp claim.
    assert.deepEqual(result, { status: 'complete', credentials: EXPECTED_CREDENTIALS });
    done(s2);
  });

  test('complete accepts the bare query string', async () => {
    const { server, ctx } = await setup([{ name: 'exchange', request: { method: 'POST', path: '/oauth/token', body: { code: 'authcode-browser-test-0002' } }, response: { body: TOKENS } }]);
    const start = await browser.start(ctx);
    const result = await browser.complete(ctx, start.state, `?code=authcode-browser-test-0002&state=${start.state.state as string}`);
    assert.equal(result.status, 'complete');
    done(server);
  });

  test('complete refuses a callback whose state does not match, without exchanging the code', async () => {
    const { server, ctx } = await setup([]);
    const start = await browser.start(ctx);
    const result = await browser.complete(ctx, start.state, 'http://localhost:1455/auth/callback?code=authcode-browser-test-0003&state=forged-state-value');
    assert.equal(result.status, 'error');
    assert.match(result.error ?? '', /state does not match/);
    const missing = await browser.complete(ctx, start.state, 'http://localhost:1455/auth/callback?code=authcode-browser-test-0003');
    assert.equal(missing.status, 'error');
    assert.equal(server.requests.length, 0);
  });

  test('complete reports a denied consent', async () => {
    const { server, ctx } = await setup([]);
    const start = await browser.start(ctx);
    const result = await browser.complete(ctx, start.state, `http://localhost:1455/auth/callback?error=access_denied&error_description=User+cancelled&state=${start.state.state as string}`);
    assert.equal(result.status, 'denied');
    assert.equal(server.requests.length, 0);
  });

  test('complete reports expired after the flow lifetime', async () => {
    const { ctx } = await setup([]);
    const start = await browser.start(ctx);
    const { server: later, ctx: lateCtx } = await setup([], new Date(NOW.getTime() + 601_000));
    const result = await browser.complete(lateCtx, start.state, `http://localhost:1455/auth/callback?code=x&state=${start.state.state as string}`);
    assert.equal(result.status, 'expired');
    assert.equal(later.requests.length, 0);
  });

  test('complete asks for the URL when the paste is unusable', async () => {
    const { ctx } = await setup([]);
    const start = await browser.start(ctx);
    const result = await browser.complete(ctx, start.state, '   ');
    assert.equal(result.status, 'error');
    assert.match(result.error ?? '', /Paste the full URL/);
  });
});
