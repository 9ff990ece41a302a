/**
 * The SSRF guard as the host applies it to this plugin: the real createHttpClient with the
 * hostPolicy the server builds for plugins declaring `capabilities.user_supplied_urls`
 * (server/src/services/plugin-runtime.ts), and the allow-list parsed the way
 * CUSTOM_HTTP_ALLOWED_HOSTS is (parseHostList).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHttpClient, parseHostList, type PluginContext, type ProviderUsage } from '@usage-monitor/core';
import plugin, { type Settings } from '../src/index.js';

const SECRET = 'chttp-ssrf-secret-51d0c7a9e3f2';
const BIG = 6 * 1024 * 1024; // above the client's default 5 MiB cap, which the host keeps

let server: http.Server;
let port = 0;
const seen: Array<{ url: string; authorization: string | undefined }> = [];

before(async () => {
  server = http.createServer((req, res) => {
    seen.push({ url: req.url ?? '', authorization: req.headers.authorization });
    const u = new URL(req.url ?? '/', 'http://x');
    if (u.pathname === '/usage') {
      res.setHeader('content-type', 'application/json');
      // The upstream echoes the credential: it must not reach raw, summary or errors.
      res.end(JSON.stringify({ credits: { remaining: '42.5' }, echo: req.headers.authorization }));
    } else if (u.pathname === '/redirect') {
      res.writeHead(302, { location: u.searchParams.get('to') ?? '/' }).end();
    } else if (u.pathname === '/big') {
      res.setHeader('content-type', 'application/json');
      res.end(`{"pad":"${'x'.repeat(BIG)}","credits":{"remaining":1}}`);
    } else {
      res.writeHead(404).end('{}');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
after(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** Runs the plugin the way the host does, with CUSTOM_HTTP_ALLOWED_HOSTS = `allowList`. */
function run(url: string, allowList: string): Promise<ProviderUsage> {
  const signal = AbortSignal.timeout(5000);
  const ctx = {
    credentials: { secret: SECRET },
    settings: { url, metrics: [{ label: 'Credits remaining', path: 'credits.remaining', unit: 'credits', type: 'remaining' }] },
    baseUrl: plugin.defaultBaseUrl,
    http: createHttpClient({
      timeoutMs: 3000,
      signal,
      secrets: [SECRET],
      userAgent: 'usage-monitor/0.1 (+self-hosted)',
      ...(plugin.capabilities?.user_supplied_urls === true ? { hostPolicy: { allowedHosts: parseHostList(allowList) } } : {}),
    }),
    clock: { now: () => new Date() },
    signal,
    logger: { debug() {}, info() {}, warn() {}, error() {} },
  } as PluginContext<{ secret: string }, Settings>;
  return plugin.fetchUsage(ctx);
}

async function refused(url: string, allowList: string, pattern: RegExp = /./) {
  await assert.rejects(run(url, allowList), (err: Error & { code?: string }) => {
    assert.equal(err.name, 'ConfigError', `${url}: ${err.name}: ${err.message}`);
    assert.equal(err.code, 'config_error');
    assert.match(err.message, pattern);
    assert.ok(!err.message.includes(SECRET), 'the secret leaked into the error');
    return true;
  });
}

test('the plugin declares user_supplied_urls, so the host applies the guard', () => {
  assert.equal(plugin.capabilities?.user_supplied_urls, true);
});

describe('without an allow-list', () => {
  const targets = () => [
    `http://127.0.0.1:${port}/usage`,
    'http://10.0.0.1/usage',
    'http://169.254.169.254/latest/meta-data/',
    `http://[::1]:${port}/usage`,
    `http://localhost:${port}/usage`, // a name that resolves to loopback
    'http://0.0.0.0/usage',
    'http://[::ffff:127.0.0.1]/usage',
  ];
  test('loopback, private, link-local and reserved targets are refused with ConfigError', async () => {
    const before = seen.length;
    for (const url of targets()) await refused(url, '');
    assert.equal(seen.length, before, 'no request may reach the local server');
  });
  test('a redirect from an allowed host to any of them is refused', async () => {
    const before = seen.length;
    for (const url of targets().slice(1)) {
      await refused(`http://127.0.0.1:${port}/redirect?to=${encodeURIComponent(url)}`, '127.0.0.1');
    }
    // Only the redirecting hop itself reached the server.
    assert.ok(seen.slice(before).every((r) => r.url.startsWith('/redirect')));
  });
});

test('non-http schemes and credentials in the URL are refused', async () => {
  await refused(`http://user:pass@127.0.0.1:${port}/usage`, '127.0.0.1', /credentials/);
  await refused(`http://127.0.0.1:${port}/redirect?to=${encodeURIComponent('file:///etc/passwd')}`, '127.0.0.1', /http and https/);
});

test('an allow-listed 127.0.0.1 works, and the secret stays out of the result', async () => {
  const usage = await run(`http://127.0.0.1:${port}/usage`, '127.0.0.1:8080, other.example');
  assert.deepEqual(usage.metrics, [{ label: 'Credits remaining', value: 42.5, unit: 'credits', maximum: null }]);
  assert.equal(seen.at(-1)?.authorization, `Bearer ${SECRET}`);
  assert.ok(!JSON.stringify(usage).includes(SECRET), 'the secret leaked into the result');
});

test('an allow-listed name (localhost) works, and a redirect to another allow-listed host drops the Authorization header', async () => {
  const usage = await run(`http://127.0.0.1:${port}/redirect?to=${encodeURIComponent(`http://localhost:${port}/usage`)}`, '127.0.0.1,localhost');
  assert.equal(usage.metrics[0]?.value, 42.5);
  assert.equal(seen.at(-1)?.authorization, undefined);
});

test('an oversize response is refused', async () => {
  await assert.rejects(run(`http://127.0.0.1:${port}/big`, '127.0.0.1'), (err: Error & { code?: string }) => {
    assert.equal(err.code, 'upstream_error', `${err.name}: ${err.message}`);
    assert.match(err.message, /exceeded/);
    return true;
  });
});
