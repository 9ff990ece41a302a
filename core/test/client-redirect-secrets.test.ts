import { test } from 'node:test';
import http from 'node:http';
import assert from 'node:assert/strict';
import { RateLimitedError, createHttpClient, throwForStatus, type HttpResponse } from '../src/index.js';
import { startFixtureServer, type FixtureEntry, type FixtureServer } from '../src/testing/index.js';

async function withServers(away: FixtureEntry[], home: (otherUrl: string) => FixtureEntry[], fn: (home: FixtureServer, other: FixtureServer) => Promise<void>) {
  const other = await startFixtureServer(away);
  const server = await startFixtureServer(home(other.url));
  try {
    await fn(server, other);
  } finally {
    await server.close();
    await other.close();
  }
}

const SECRET = 'custom-header-secret-0123456789';

test('a cross-host redirect drops every header whose value carries a secret, whatever its name', async () => {
  await withServers(
    [{ request: { path: '/landing' }, response: { body: { where: 'other' } } }],
    (otherUrl) => [
      { request: { path: '/same' }, response: { status: 302, headers: { location: '/here' } } },
      { request: { path: '/here', headers: { 'api-key': SECRET } }, response: { body: { where: 'same' } } },
      { request: { path: '/away' }, response: { status: 307, headers: { location: `${otherUrl}/landing` } } },
    ],
    async (home, other) => {
      const http = createHttpClient({ timeoutMs: 2000, secrets: [SECRET] });
      const headers = { 'Api-Key': SECRET, 'x-auth': `Token ${SECRET}`, 'x-keep': 'yes', 'x-trace': 'abc' };
      // The same host keeps them: the secret is meant for it.
      assert.deepEqual(await http.getJson(`${home.url}/same`, { headers }), { where: 'same' });
      assert.equal(home.requests[1]!.headers['api-key'], SECRET);
      assert.equal(home.requests[1]!.headers['x-auth'], `Token ${SECRET}`);

      const res = await http.request(`${home.url}/away`, { headers });
      assert.equal(res.url, `${other.url}/landing`);
      const landed = other.requests[0]!;
      assert.equal(landed.headers['api-key'], undefined, 'a custom header name no longer leaks the secret');
      assert.equal(landed.headers['x-auth'], undefined, 'nor does a value that embeds it');
      assert.equal(landed.headers['x-keep'], 'yes');
      assert.equal(landed.headers['x-trace'], 'abc');
      assert.ok(!JSON.stringify(other.requests).includes(SECRET));
    },
  );
});

test('short secrets do not strip unrelated headers; without secrets only the known credential headers go', async () => {
  await withServers(
    [{ request: { path: '/landing' }, response: { body: {} }, repeat: true }],
    (otherUrl) => [{ request: { path: '/away' }, response: { status: 302, headers: { location: `${otherUrl}/landing` } }, repeat: true }],
    async (home, other) => {
      // "a" (shorter than the 4-character minimum sanitizeMessage also uses) would match almost any value.
      await createHttpClient({ timeoutMs: 2000, secrets: ['a', ''] }).request(`${home.url}/away`, { headers: { 'x-lang': 'javascript' } });
      assert.equal(other.requests[0]!.headers['x-lang'], 'javascript');
      assert.equal(other.requests[0]!.headers.accept, 'application/json');

      await createHttpClient({ timeoutMs: 2000 }).request(`${home.url}/away`, { headers: { 'api-key': SECRET, authorization: 'Bearer t0ken-value' } });
      assert.equal(other.requests[1]!.headers.authorization, undefined);
      // Without being told the secret, the client cannot know a custom header holds one.
      assert.equal(other.requests[1]!.headers['api-key'], SECRET);
    },
  );
});

test('getJson measures an HTTP-date Retry-After against the client clock, else the wall clock', async () => {
  // An HTTP date has whole seconds: a minute from now, rounded down.
  const at = new Date(Math.floor(Date.now() / 1000) * 1000 + 60_000);
  const server = await startFixtureServer([
    { request: { path: '/limited' }, response: { status: 429, headers: { 'retry-after': at.toUTCString() }, body: {} }, repeat: true },
  ]);
  const rejectsWith = async (http: ReturnType<typeof createHttpClient>): Promise<number | null> => {
    let retryAfterMs: number | null = null;
    await assert.rejects(http.getJson(`${server.url}/limited`), (err: unknown) => {
      assert.ok(err instanceof RateLimitedError);
      retryAfterMs = err.retryAfterMs;
      return true;
    });
    return retryAfterMs;
  };
  try {
    // A plugin clock 30 minutes behind the wall clock (a test clock, a replayed case).
    const behind = new Date(at.getTime() - 30 * 60_000);
    assert.equal(await rejectsWith(createHttpClient({ timeoutMs: 2000, clock: { now: () => behind } })), 30 * 60_000);
    const wall = await rejectsWith(createHttpClient({ timeoutMs: 2000 }));
    assert.ok(wall !== null && wall > 50_000 && wall <= 60_000, `about a minute from the wall clock, got ${wall}`);
  } finally {
    await server.close();
  }
});

test('throwForStatus takes the time to measure Retry-After against; seconds stay seconds', () => {
  const res = (retryAfter: string): HttpResponse => ({
    status: 429,
    headers: { 'retry-after': retryAfter },
    url: 'http://upstream.test/x',
    text: '{}',
    json: <T>() => ({}) as T,
  });
  const now = new Date('2026-11-20T12:00:00Z');
  assert.throws(() => throwForStatus(res('Fri, 20 Nov 2026 12:00:45 GMT'), undefined, now), (e: unknown) => e instanceof RateLimitedError && e.retryAfterMs === 45_000);
  assert.throws(() => throwForStatus(res('Fri, 20 Nov 2026 11:59:00 GMT'), undefined, now), (e: unknown) => e instanceof RateLimitedError && e.retryAfterMs === 0);
  assert.throws(() => throwForStatus(res('12'), undefined, now), (e: unknown) => e instanceof RateLimitedError && e.retryAfterMs === 12_000);
});

test('a 307 to another host with a body is refused instead of resending the body', async () => {
  let otherHits = 0;
  const other = http.createServer((_req, res) => {
    otherHits++;
    res.end('{}');
  });
  await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
  const otherPort = (other.address() as { port: number }).port;
  const origin = http.createServer((_req, res) => {
    res.writeHead(307, { location: `http://localhost:${otherPort}/token` });
    res.end();
  });
  await new Promise<void>((r) => origin.listen(0, '127.0.0.1', r));
  const port = (origin.address() as { port: number }).port;
  try {
    const client = createHttpClient({ timeoutMs: 2000 });
    await assert.rejects(client.request(`http://127.0.0.1:${port}/token`, { method: 'POST', json: { refresh_token: 'rt-secret-value-123' } }), /Refusing to resend a request body/);
    assert.equal(otherHits, 0);
  } finally {
    origin.close();
    other.close();
  }
});
