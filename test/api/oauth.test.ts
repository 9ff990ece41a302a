import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { testDatabases } from '../support/databases.js';
import { api as rawApi, createToken, setupAdmin, startTestServer, type ApiResponse, type TestServer } from '../support/server.js';

/**
 * The OAuth routes over real HTTP: the Codex plugin's device and browser flows against a local
 * mock of OpenAI's auth server (the plugin's `auth_base_url` setting points at it), and a small
 * probe plugin (written to a temp dir and loaded by path) for the error paths.
 */

const CLIENT_ID = 'app_EMoamEEZ73f0CkXaXp7hrann';
const BROWSER_REDIRECT = 'http://localhost:1455/auth/callback';
const b64url = (s: string | Buffer) => Buffer.from(s).toString('base64url');
const jwt = (payload: Record<string, unknown>, sig: string) => [b64url('{"alg":"RS256","typ":"JWT"}'), b64url(JSON.stringify(payload)), sig].join('.');

interface DeviceEntry {
  deviceAuthId: string;
  userCode: string;
  status: 'pending' | 'authorized' | 'denied';
  n: number;
}

/** OpenAI's auth endpoints as the Codex CLI uses them (reference/provider-apis.md), with made-up values. */
async function startAuthMock() {
  let n = 0;
  const devices = new Map<string, DeviceEntry>();
  /** Authorization codes the token endpoint accepts: the verifier (device) or the S256 challenge (browser). */
  const codes = new Map<string, { verifier?: string; challenge?: string; redirectUri: string }>();
  /** Every string the mock issued that must stay on the server. */
  const secrets: string[] = [];
  const requests: Array<{ method: string; path: string; body: Record<string, string> }> = [];
  let usercodeStatus = 200;

  const server = http.createServer((req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString('utf8')));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://mock');
      const form = (req.headers['content-type'] ?? '').includes('x-www-form-urlencoded');
      const body: Record<string, string> = text ? (form ? Object.fromEntries(new URLSearchParams(text)) : JSON.parse(text)) : {};
      requests.push({ method: req.method ?? 'GET', path: url.pathname, body });
      const send = (status: number, payload: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(payload));
      };
      if (req.method === 'POST' && url.pathname === '/api/accounts/deviceauth/usercode') {
        if (usercodeStatus !== 200) return send(usercodeStatus, { detail: 'Not Found' });
        if (body.client_id !== CLIENT_ID) return send(400, { error: 'invalid_client' });
        const entry: DeviceEntry = { deviceAuthId: `deviceauth_api_test_${++n}_a1b2c3d4`, userCode: `ABCD-${String(1000 + n)}`, status: 'pending', n };
        devices.set(entry.userCode, entry);
        secrets.push(entry.deviceAuthId);
        // `interval` is a string of seconds in the real response.
        return send(200, { device_auth_id: entry.deviceAuthId, user_code: entry.userCode, interval: '5' });
      }
      if (req.method === 'POST' && url.pathname === '/api/accounts/deviceauth/token') {
        const entry = devices.get(body.user_code ?? '');
        if (!entry || entry.deviceAuthId !== body.device_auth_id) return send(404, { detail: 'Not Found' });
        if (entry.status === 'pending') return send(403, { error: { message: 'Device authorization is pending' } });
        if (entry.status === 'denied') return send(400, { error: 'access_denied' });
        const code = `authcode-device-api-test-${entry.n}-x9y8z7`;
        const verifier = `verifier-device-api-test-${entry.n}-q1w2e3r4t5`;
        secrets.push(code, verifier);
        codes.set(code, { verifier, redirectUri: `${baseUrl}/deviceauth/callback` });
        return send(200, { authorization_code: code, code_challenge: 'challenge-device-api-test', code_verifier: verifier });
      }
      if (req.method === 'POST' && url.pathname === '/oauth/token' && form) {
        const expected = codes.get(body.code ?? '');
        const verifierOk =
          expected &&
          body.code_verifier &&
          (expected.verifier ? expected.verifier === body.code_verifier : crypto.createHash('sha256').update(body.code_verifier).digest('base64url') === expected.challenge);
        if (!expected || !verifierOk || body.grant_type !== 'authorization_code' || body.client_id !== CLIENT_ID || body.redirect_uri !== expected.redirectUri) {
          return send(400, { error: 'invalid_grant', error_description: 'Invalid authorization code' });
        }
        codes.delete(body.code!);
        const k = ++n;
        const exp = Math.floor(Date.now() / 1000) + 864000;
        const tokens = {
          access_token: jwt({ exp, 'https://api.openai.com/auth': { chatgpt_account_id: `acct-api-test-${k}` } }, `sig-access-api-test-${k}`),
          refresh_token: `codex-api-test-refresh-${k}-0123456789`,
          id_token: jwt({ email: 'dev@example.test', 'https://api.openai.com/auth': { chatgpt_account_id: `acct-api-test-${k}` } }, `sig-id-api-test-${k}`),
        };
        secrets.push(tokens.access_token, tokens.refresh_token, tokens.id_token, `sig-access-api-test-${k}`);
        return send(200, { ...tokens, expires_in: 864000 });
      }
      send(599, { error: `unexpected ${req.method} ${url.pathname}` });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: baseUrl,
    secrets,
    requests,
    device(userCode: string): DeviceEntry {
      const d = devices.get(userCode);
      assert.ok(d, `the mock issued ${userCode}`);
      return d;
    },
    /** The user approved the browser sign-in: the provider will accept this code with the verifier of `challenge`. */
    issueBrowserCode(challenge: string): string {
      const code = `authcode-browser-api-test-${++n}-m3n4b5`;
      secrets.push(code);
      codes.set(code, { challenge, redirectUri: BROWSER_REDIRECT });
      return code;
    },
    tokenExchanges: () => requests.filter((r) => r.path === '/oauth/token').length,
    upstreamCalls: () => requests.length,
    set usercodeStatus(s: number) {
      usercodeStatus = s;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** A plugin with only a device flow whose steps misbehave on demand (settings.mode). Plain JS: it imports nothing. */
const PROBE_PLUGIN = `
const SECRET = 'probe-device-state-secret-0123456789';
export default {
  apiVersion: 1,
  id: 'oauth-probe',
  name: 'OAuth probe',
  description: 'Test plugin: a device flow that fails in chosen ways',
  credentials: { type: 'object', properties: { token: { type: 'string', writeOnly: true } } },
  settings: {
    type: 'object',
    additionalProperties: false,
    properties: {
      mode: { enum: ['ok', 'start_throws', 'start_invalid', 'poll_throws', 'poll_error', 'poll_bad_url', 'poll_hangs'], default: 'ok' },
      hang_url: { type: 'string' },
    },
  },
  defaultBaseUrl: 'https://probe.invalid',
  auth: {
    kind: 'oauth',
    device: {
      async start(ctx) {
        if (ctx.settings.mode === 'start_throws') throw new Error('the probe start failed');
        if (ctx.settings.mode === 'start_invalid') return { state: {}, user_code: '' };
        return { state: { secret: SECRET }, user_code: 'PROBE-0001', verification_uri: 'https://probe.invalid/device', expires_in_seconds: 600, interval_seconds: 1 };
      },
      async poll(ctx, state) {
        const mode = ctx.settings.mode;
        if (mode === 'poll_throws') throw new Error('the probe poll failed near ' + state.secret);
        if (mode === 'poll_error') return { status: 'error', error: 'refused ' + state.secret };
        if (mode === 'poll_bad_url') await ctx.http.request('ftp://probe.invalid/x');
        if (mode === 'poll_hangs') await ctx.http.request(ctx.settings.hang_url);
        return { status: 'pending', interval_seconds: 1 };
      },
    },
  },
  metrics: { Value: { type: 'gauge', unit: 'count', direction: 'increasing' } },
  async fetchUsage() {
    return { status: 'healthy', summary: '', metrics: [{ label: 'Value', value: null, unit: 'count', maximum: null }] };
  },
};
`;

for (const db of testDatabases()) {
  describe(`OAuth flows (${db.name})`, () => {
    let server: TestServer;
    let admin: string;
    let mock: Awaited<ReturnType<typeof startAuthMock>>;
    let hang: http.Server;
    let hangUrl: string;
    let pluginDir: string;
    const texts: string[] = [];

    /** Every response is kept, to check that no secret ever left the server. */
    async function api<T = any>(method: string, p: string, opts: Parameters<typeof rawApi>[3] = {}): Promise<ApiResponse<T>> {
      const res = await rawApi<T>(server, method, p, { token: admin, ...opts });
      texts.push(res.text);
      return res;
    }
    const codexSettings = () => ({ extra: { auth_base_url: mock.url } });
    const advance = (ms: number) => server.clock.advance(ms);

    before(async () => {
      mock = await startAuthMock();
      hang = http.createServer(() => {
        /* never answers */
      });
      await new Promise<void>((r) => hang.listen(0, '127.0.0.1', r));
      hangUrl = `http://127.0.0.1:${(hang.address() as AddressInfo).port}/hang`;
      pluginDir = fs.mkdtempSync(path.join(os.tmpdir(), 'um-oauth-probe-'));
      fs.writeFileSync(path.join(pluginDir, 'oauth-probe.mjs'), PROBE_PLUGIN);
      server = await startTestServer(db, {
        env: {
          PLUGINS: ['@usage-monitor/provider-codex', '@usage-monitor/provider-openrouter', path.join(pluginDir, 'oauth-probe.mjs')].join(','),
          REQUEST_TIMEOUT_SECONDS: '1',
        },
      });
      admin = await setupAdmin(server);
    });
    after(async () => {
      await server.close();
      await mock.close();
      hang.closeAllConnections();
      await new Promise((r) => hang.close(r));
      fs.rmSync(pluginDir, { recursive: true, force: true });
    });

    async function credentialsOf(id: number): Promise<Record<string, unknown>> {
      const { connections } = server.running.services;
      return connections.credentialsOf(await connections.get(id));
    }

    test('GET /providers announces the Codex flows', async () => {
      const res = await api('GET', '/providers');
      const codex = res.body.find((p: { id: string }) => p.id === 'codex');
      assert.deepEqual(codex.auth, { kind: 'oauth', flows: ['device', 'browser'] });
      assert.equal(codex.capabilities.oauth, true);
    });

    test('device flow: start, pending, complete creates the connection', async () => {
      const start = await api('POST', '/providers/codex/oauth/device/start', { body: codexSettings() });
      assert.equal(start.status, 200, start.text);
      const { flow_id, user_code, verification_uri, verification_uri_complete, expires_at, interval_seconds } = start.body;
      assert.match(flow_id, /^[A-Za-z0-9_-]{43}$/, 'a random 256-bit id');
      assert.match(user_code, /^ABCD-\d{4}$/);
      assert.equal(verification_uri, `${mock.url}/codex/device`);
      assert.equal(verification_uri_complete, null);
      assert.equal(interval_seconds, 5);
      const ttl = Date.parse(expires_at) - server.clock.now().getTime();
      assert.ok(ttl > 890_000 && ttl <= 900_000, `expires in 15 minutes (${ttl} ms)`);
      assert.deepEqual(Object.keys(start.body).sort(), ['expires_at', 'flow_id', 'interval_seconds', 'user_code', 'verification_uri', 'verification_uri_complete']);

      // Polling sooner than the interval is slowed down without asking the provider.
      const calls = mock.upstreamCalls();
      const early = await api('POST', `/providers/codex/oauth/device/${flow_id}/poll`, { body: {} });
      assert.deepEqual(early.body, { status: 'slow_down', interval_seconds: 5 });
      assert.equal(mock.upstreamCalls(), calls);

      advance(5_000);
      const pending = await api('POST', `/providers/codex/oauth/device/${flow_id}/poll`, { body: {} });
      assert.equal(pending.status, 200, pending.text);
      assert.deepEqual(pending.body, { status: 'pending', interval_seconds: 5 });

      mock.device(user_code).status = 'authorized';
      advance(5_000);
      const done = await api('POST', `/providers/codex/oauth/device/${flow_id}/poll`, { body: { label: 'Work ChatGPT' } });
      assert.equal(done.status, 200, done.text);
      assert.equal(done.body.status, 'complete');
      assert.equal(done.body.config.provider, 'codex');
      assert.equal(done.body.config.label, 'Work ChatGPT');
      assert.equal(done.body.config.api_key_masked, '••••••••');
      assert.deepEqual(done.body.config.extra, { auth_base_url: mock.url });

      const list = await api('GET', '/configs');
      const created = list.body.find((c: { id: number }) => c.id === done.body.config.id);
      assert.ok(created, 'the connection is listed');
      assert.equal(created.provider, 'codex');
      const creds = await credentialsOf(created.id);
      assert.match(String(creds.refresh_token), /^codex-api-test-refresh-\d+-0123456789$/);
      assert.match(String(creds.access_token), /^eyJ/);
      assert.match(String(creds.account_id), /^acct-api-test-\d+$/);

      // The flow is gone.
      const again = await api('POST', `/providers/codex/oauth/device/${flow_id}/poll`, { body: {} });
      assert.equal(again.status, 404);
      assert.equal(again.body.code, 'not_found');
    });

    test('device flow: expiry after start answers expired, then the id is forgotten', async () => {
      const start = await api('POST', '/providers/codex/oauth/device/start', { body: codexSettings() });
      const { flow_id } = start.body;
      const calls = mock.upstreamCalls();
      advance(901_000);
      const expired = await api('POST', `/providers/codex/oauth/device/${flow_id}/poll`, { body: {} });
      assert.equal(expired.status, 200, expired.text);
      assert.equal(expired.body.status, 'expired');
      assert.match(expired.body.error, /expired/);
      assert.equal((await api('POST', `/providers/codex/oauth/device/${flow_id}/poll`, { body: {} })).body.status, 'expired', 'stable');
      assert.equal(mock.upstreamCalls(), calls, 'the provider is not asked about an expired flow');
      advance(60 * 60 * 1000);
      assert.equal((await api('POST', `/providers/codex/oauth/device/${flow_id}/poll`, { body: {} })).status, 404);
    });

    test('device flow: a denied sign-in ends the flow', async () => {
      const start = await api('POST', '/providers/codex/oauth/device/start', { body: codexSettings() });
      mock.device(start.body.user_code).status = 'denied';
      advance(5_000);
      const denied = await api('POST', `/providers/codex/oauth/device/${start.body.flow_id}/poll`, { body: {} });
      assert.equal(denied.status, 200, denied.text);
      assert.deepEqual(denied.body, { status: 'denied', error: 'The sign-in was denied' });
      advance(5_000);
      assert.equal((await api('POST', `/providers/codex/oauth/device/${start.body.flow_id}/poll`, { body: {} })).status, 404);
    });

    test('re-authorizing an existing connection with config_id: new credentials, same id, label and settings', async () => {
      const old = await api('POST', '/configs', {
        body: { provider: 'codex', label: 'Old sign-in', credentials: { access_token: 'old-access-token-api-test-0001', refresh_token: 'old-refresh-token-api-test-0001' }, extra: { auth_base_url: mock.url } },
      });
      assert.equal(old.status, 201, old.text);
      const other = await api('POST', '/configs', { body: { provider: 'openrouter', api_key: 'sk-or-v1-oauth-test-other-provider-0001' } });
      assert.equal(other.status, 201, other.text);

      const start = await api('POST', '/providers/codex/oauth/device/start', { body: codexSettings() });
      const pollPath = `/providers/codex/oauth/device/${start.body.flow_id}/poll`;
      mock.device(start.body.user_code).status = 'authorized';
      advance(5_000);
      const calls = mock.upstreamCalls();
      // A connection of another provider, or one that does not exist, is refused before the provider is asked.
      const wrong = await api('POST', pollPath, { body: { config_id: other.body.id } });
      assert.equal(wrong.status, 400, wrong.text);
      assert.equal(wrong.body.errors[0].path, '/body/config_id');
      const missing = await api('POST', pollPath, { body: { config_id: 999999 } });
      assert.equal(missing.status, 404, missing.text);
      assert.equal(mock.upstreamCalls(), calls);

      const before = (await api('GET', '/configs')).body.length;
      const done = await api('POST', pollPath, { body: { config_id: old.body.id } });
      assert.equal(done.status, 200, done.text);
      assert.equal(done.body.status, 'complete');
      assert.equal(done.body.config.id, old.body.id);
      assert.equal(done.body.config.label, 'Old sign-in');
      assert.deepEqual(done.body.config.extra, { auth_base_url: mock.url });
      assert.equal((await api('GET', '/configs')).body.length, before, 'no new connection');
      const creds = await credentialsOf(old.body.id);
      assert.notEqual(creds.access_token, 'old-access-token-api-test-0001');
      assert.match(String(creds.refresh_token), /^codex-api-test-refresh-/);
    });

    test('browser flow: start, a wrong callback keeps the flow, the right one completes it (PKCE S256)', async () => {
      const start = await api('POST', '/providers/codex/oauth/browser/start', { body: codexSettings() });
      assert.equal(start.status, 200, start.text);
      assert.deepEqual(Object.keys(start.body).sort(), ['authorization_url', 'expires_at', 'flow_id', 'redirect_uri']);
      assert.equal(start.body.redirect_uri, BROWSER_REDIRECT);
      const ttl = Date.parse(start.body.expires_at) - server.clock.now().getTime();
      assert.ok(ttl > 590_000 && ttl <= 600_000, `expires in 10 minutes (${ttl} ms)`);
      const auth = new URL(start.body.authorization_url);
      assert.equal(`${auth.origin}${auth.pathname}`, `${mock.url}/oauth/authorize`);
      assert.equal(auth.searchParams.get('code_challenge_method'), 'S256');
      assert.equal(auth.searchParams.get('code_verifier'), null);
      const state = auth.searchParams.get('state')!;
      const code = mock.issueBrowserCode(auth.searchParams.get('code_challenge')!);
      const completePath = `/providers/codex/oauth/browser/${start.body.flow_id}/complete`;

      const wrongState = await api('POST', completePath, { body: { callback: `${BROWSER_REDIRECT}?code=${code}&state=not-the-state` } });
      assert.equal(wrongState.status, 200, wrongState.text);
      assert.equal(wrongState.body.status, 'error');
      assert.match(wrongState.body.error, /state/);

      const exchanges = mock.tokenExchanges();
      const done = await api('POST', completePath, { body: { callback: `${BROWSER_REDIRECT}?code=${code}&state=${state}`, label: 'Browser sign-in' } });
      assert.equal(done.status, 200, done.text);
      assert.equal(done.body.status, 'complete');
      assert.equal(done.body.config.label, 'Browser sign-in');
      assert.equal(mock.tokenExchanges(), exchanges + 1, 'the code was exchanged with the flow’s verifier');
      const creds = await credentialsOf(done.body.config.id);
      assert.match(String(creds.refresh_token), /^codex-api-test-refresh-/);

      assert.equal((await api('POST', completePath, { body: { callback: `${BROWSER_REDIRECT}?code=${code}&state=${state}` } })).status, 404);
    });

    test('browser flow: a denied sign-in ends the flow; an expired one answers expired', async () => {
      const start = await api('POST', '/providers/codex/oauth/browser/start', { body: codexSettings() });
      const state = new URL(start.body.authorization_url).searchParams.get('state');
      const completePath = `/providers/codex/oauth/browser/${start.body.flow_id}/complete`;
      const denied = await api('POST', completePath, { body: { callback: `${BROWSER_REDIRECT}?error=access_denied&state=${state}` } });
      assert.deepEqual(denied.body, { status: 'denied', error: 'The sign-in was denied' });
      assert.equal((await api('POST', completePath, { body: { callback: `${BROWSER_REDIRECT}?error=access_denied&state=${state}` } })).status, 404);

      const late = await api('POST', '/providers/codex/oauth/browser/start', { body: codexSettings() });
      advance(601_000);
      const expired = await api('POST', `/providers/codex/oauth/browser/${late.body.flow_id}/complete`, { body: { callback: `${BROWSER_REDIRECT}?code=x&state=y` } });
      assert.equal(expired.status, 200);
      assert.equal(expired.body.status, 'expired');
    });

    test('a failed save keeps the issued credentials: the next call saves them without asking the provider again', async () => {
      const start = await api('POST', '/providers/codex/oauth/device/start', { body: codexSettings() });
      mock.device(start.body.user_code).status = 'authorized';
      advance(5_000);
      const pollPath = `/providers/codex/oauth/device/${start.body.flow_id}/poll`;
      const clash = await api('POST', pollPath, { body: { label: 'Work ChatGPT' } });
      assert.equal(clash.status, 409, clash.text);
      const calls = mock.upstreamCalls();
      const saved = await api('POST', pollPath, { body: { label: 'Second ChatGPT' } });
      assert.equal(saved.status, 200, saved.text);
      assert.equal(saved.body.status, 'complete');
      assert.equal(saved.body.config.label, 'Second ChatGPT');
      assert.equal(mock.upstreamCalls(), calls);
    });

    test('concurrent polls of one flow share one provider call and create one connection', async () => {
      const start = await api('POST', '/providers/codex/oauth/device/start', { body: codexSettings() });
      mock.device(start.body.user_code).status = 'authorized';
      advance(5_000);
      const before = (await api('GET', '/configs')).body.length;
      const pollPath = `/providers/codex/oauth/device/${start.body.flow_id}/poll`;
      const [a, b] = await Promise.all([api('POST', pollPath, { body: {} }), api('POST', pollPath, { body: {} })]);
      assert.equal(a.body.status, 'complete', a.text);
      assert.equal(b.body.status, 'complete', b.text);
      assert.equal(a.body.config.id, b.body.config.id);
      assert.equal((await api('GET', '/configs')).body.length, before + 1);
    });

    test('the /codex/oauth aliases run the same flows for provider codex', async () => {
      const start = await api('POST', '/codex/oauth/device/start', { body: codexSettings() });
      assert.equal(start.status, 200, start.text);
      mock.device(start.body.user_code).status = 'authorized';
      advance(5_000);
      const done = await api('POST', `/codex/oauth/device/${start.body.flow_id}/poll`, { body: { label: 'Alias device' } });
      assert.equal(done.status, 200, done.text);
      assert.equal(done.body.status, 'complete');
      assert.equal(done.body.config.provider, 'codex');

      const browser = await api('POST', '/codex/oauth/browser/start', { body: codexSettings() });
      assert.equal(browser.status, 200, browser.text);
      const auth = new URL(browser.body.authorization_url);
      const code = mock.issueBrowserCode(auth.searchParams.get('code_challenge')!);
      // A flow started on the alias is the codex flow of the generic path too.
      const completed = await api('POST', `/providers/codex/oauth/browser/${browser.body.flow_id}/complete`, {
        body: { callback: `${BROWSER_REDIRECT}?code=${code}&state=${auth.searchParams.get('state')}`, label: 'Alias browser' },
      });
      assert.equal(completed.body.status, 'complete', completed.text);

      const again = await api('POST', '/codex/oauth/browser/start', { body: codexSettings() });
      const viaAlias = await api('POST', `/codex/oauth/browser/${again.body.flow_id}/complete`, { body: { callback: `${BROWSER_REDIRECT}?error=access_denied&state=${new URL(again.body.authorization_url).searchParams.get('state')}` } });
      assert.equal(viaAlias.body.status, 'denied');

      const doc = (await api('GET', '/openapi.json')).body;
      assert.equal(doc.paths['/codex/oauth/device/start'].post.operationId, 'startCodexDeviceFlow');
      assert.equal(doc.paths['/providers/{provider}/oauth/device/start'].post.operationId, 'startOAuthDeviceFlow');
      assert.equal(doc.paths['/codex/oauth/browser/{flow_id}/complete'].post['x-access'], 'admin');
    });

    const ROUTES = [
      ['/providers/codex/oauth/device/start', {}],
      ['/providers/codex/oauth/device/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA/poll', {}],
      ['/providers/codex/oauth/browser/start', {}],
      ['/providers/codex/oauth/browser/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA/complete', { callback: 'x' }],
      ['/codex/oauth/device/start', {}],
      ['/codex/oauth/device/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA/poll', {}],
      ['/codex/oauth/browser/start', {}],
      ['/codex/oauth/browser/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA/complete', { callback: 'x' }],
    ] as const;

    test('admin only: API tokens get 403 (whatever their scopes), no token 401', async () => {
      const token = await createToken(server, admin, ['configs:read', 'history:read', 'poll:write', 'usage:read', 'analytics:read', 'datasources:read']);
      const calls = mock.upstreamCalls();
      for (const [p, body] of ROUTES) {
        assert.equal((await api('POST', p, { token, body })).status, 403, p);
        const anonymous = await rawApi(server, 'POST', p, { body });
        assert.equal(anonymous.status, 401, p);
      }
      assert.equal(mock.upstreamCalls(), calls);
    });

    test('bad input is a 400 naming the field', async () => {
      const cases: Array<[string, unknown, string]> = [
        ['/providers/codex/oauth/device/start', { unknown: 1 }, '/body/unknown'],
        ['/providers/codex/oauth/device/start', { extra: { auth_base_url: 'ftp://auth.example' } }, '/body/extra/auth_base_url'],
        ['/providers/codex/oauth/device/start', { extra: { nope: true } }, '/body/extra/nope'],
        ['/providers/codex/oauth/browser/start', { base_url: 'not a url' }, '/body/base_url'],
        ['/providers/codex/oauth/device/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA/poll', { config_id: 'one' }, '/body/config_id'],
        ['/providers/codex/oauth/device/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA/poll', { label: 'x'.repeat(121) }, '/body/label'],
        ['/providers/codex/oauth/device/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA/poll', { extra: {} }, '/body/extra'],
        ['/providers/codex/oauth/browser/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA/complete', {}, '/body/callback'],
        ['/providers/codex/oauth/browser/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA/complete', { callback: '' }, '/body/callback'],
        ['/providers/codex/oauth/device/not%20an%20id!/poll', {}, '/params/flow_id'],
        ['/codex/oauth/browser/short/complete', { callback: 'x' }, '/params/flow_id'],
        ['/providers/Not_A_Provider/oauth/device/start', {}, '/params/provider'],
      ];
      for (const [p, body, field] of cases) {
        const res = await api('POST', p, { body });
        assert.equal(res.status, 400, `${p} ${JSON.stringify(body)}: ${res.text}`);
        assert.equal(res.headers.get('content-type'), 'application/problem+json');
        assert.ok(
          res.body.errors.some((e: { path: string }) => e.path === field),
          `${field} in ${JSON.stringify(res.body.errors)}`,
        );
      }
    });

    test('unknown flows, unknown providers and providers without the flow are 404', async () => {
      const unknownId = crypto.randomBytes(32).toString('base64url');
      const cases: Array<[string, unknown]> = [
        [`/providers/codex/oauth/device/${unknownId}/poll`, {}],
        [`/providers/codex/oauth/browser/${unknownId}/complete`, { callback: 'x' }],
        [`/codex/oauth/device/${unknownId}/poll`, {}],
        ['/providers/no-such-provider/oauth/device/start', {}],
        ['/providers/openrouter/oauth/device/start', {}],
        ['/providers/openrouter/oauth/browser/start', {}],
        ['/providers/oauth-probe/oauth/browser/start', {}],
        [`/providers/oauth-probe/oauth/browser/${unknownId}/complete`, { callback: 'x' }],
      ];
      for (const [p, body] of cases) {
        const res = await api('POST', p, { body });
        assert.equal(res.status, 404, `${p}: ${res.text}`);
        assert.equal(res.body.code, 'not_found');
      }
      // A flow id is bound to its provider and its kind.
      const device = await api('POST', '/providers/codex/oauth/device/start', { body: codexSettings() });
      const browserPath = `/providers/codex/oauth/browser/${device.body.flow_id}/complete`;
      assert.equal((await api('POST', browserPath, { body: { callback: 'x' } })).status, 404);
      assert.equal((await api('POST', `/providers/oauth-probe/oauth/device/${device.body.flow_id}/poll`, { body: {} })).status, 404);
    });

    test('plugin failures are classified like credential tests, with the flow state scrubbed', async () => {
      mock.usercodeStatus = 404;
      const notEnabled = await api('POST', '/providers/codex/oauth/device/start', { body: codexSettings() });
      mock.usercodeStatus = 200;
      assert.equal(notEnabled.status, 502, notEnabled.text);
      assert.equal(notEnabled.body.code, 'upstream_error');
      assert.match(notEnabled.body.detail, /not enabled/);

      const down = await api('POST', '/providers/codex/oauth/device/start', { body: { extra: { auth_base_url: 'http://127.0.0.1:9' } } });
      assert.equal(down.status, 502, down.text);
      assert.equal(down.body.code, 'upstream_error');

      const probe = async (mode: string, extra: Record<string, unknown> = {}) => {
        const start = await api('POST', '/providers/oauth-probe/oauth/device/start', { body: { extra: { mode, ...extra } } });
        if (start.status !== 200) return start;
        advance(1_000);
        return api('POST', `/providers/oauth-probe/oauth/device/${start.body.flow_id}/poll`, { body: {} });
      };
      const startThrows = await probe('start_throws');
      assert.equal(startThrows.status, 502);
      assert.match(startThrows.body.detail, /the probe start failed/);
      const invalid = await probe('start_invalid');
      assert.equal(invalid.status, 502);
      assert.match(invalid.body.detail, /invalid device flow start/);
      const pollThrows = await probe('poll_throws');
      assert.equal(pollThrows.status, 502);
      assert.match(pollThrows.body.detail, /the probe poll failed near \[REDACTED\]/);
      const pollError = await probe('poll_error');
      assert.equal(pollError.status, 200);
      assert.deepEqual(pollError.body, { status: 'error', error: 'refused [REDACTED]' });
      const badUrl = await probe('poll_bad_url');
      assert.equal(badUrl.status, 400, badUrl.text);
      assert.equal(badUrl.body.code, 'config_error');
      const hangs = await probe('poll_hangs', { hang_url: hangUrl });
      assert.equal(hangs.status, 504, hangs.text);
      assert.equal(hangs.body.code, 'timeout');
      const ok = await probe('ok');
      assert.deepEqual(ok.body, { status: 'pending', interval_seconds: 1 });
    });

    test('no flow secret or issued credential ever reaches a response or the log', () => {
      const logs = server.logs.text();
      assert.ok(mock.secrets.length > 10);
      for (const secret of [...mock.secrets, 'probe-device-state-secret-0123456789']) {
        assert.ok(!texts.some((t) => t.includes(secret)), `a response carried ${secret.slice(0, 24)}…`);
        assert.ok(!logs.includes(secret), `the log carried ${secret.slice(0, 24)}…`);
      }
      // The PKCE verifiers the server generated: read back from what the mock received.
      const verifiers = mock.requests.map((r) => r.body.code_verifier).filter((v): v is string => typeof v === 'string');
      assert.ok(verifiers.length > 0);
      for (const v of verifiers) assert.ok(!texts.some((t) => t.includes(v)) && !logs.includes(v));
    });
  });
}
