import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AuthError, ConfigError, RateLimitedError, TimeoutError, UpstreamError, createHttpClient, parseRetryAfter } from '../src/index.js';
import { startFixtureServer, type FixtureEntry, type FixtureServer } from '../src/testing/index.js';

async function withServer(entries: FixtureEntry[], fn: (s: FixtureServer) => Promise<void>): Promise<void> {
  const server = await startFixtureServer(entries);
  try {
    await fn(server);
  } finally {
    await server.close();
  }
}

test('request: query building, JSON and form bodies, lower-cased headers', async () => {
  await withServer(
    [
      { request: { path: '/q', query: { a: '1', list: ['x', 'y'] } }, response: { body: { ok: true } } },
      { request: { method: 'POST', path: '/json', body: { n: 1 } }, response: { body: {} } },
      { request: { method: 'POST', path: '/form', body: { grant_type: 'x' } }, response: { body: {} } },
    ],
    async (s) => {
      const http = createHttpClient({ timeoutMs: 2000 });
      const res = await http.request(`${s.url}/q`, { query: { a: 1, skip: null, none: undefined, list: ['x', 'y'] }, headers: { 'X-Custom': 'v' } });
      assert.equal(res.status, 200);
      assert.deepEqual(res.json(), { ok: true });
      assert.equal(res.url, `${s.url}/q?a=1&list=x&list=y`);
      assert.equal(s.requests[0]!.headers['x-custom'], 'v');
      assert.equal(s.requests[0]!.headers.accept, 'application/json');
      await http.request(`${s.url}/json`, { method: 'POST', json: { n: 1 } });
      assert.equal(s.requests[1]!.headers['content-type'], 'application/json');
      await http.request(`${s.url}/form`, { method: 'POST', form: { grant_type: 'x' } });
      assert.equal(s.requests[2]!.headers['content-type'], 'application/x-www-form-urlencoded');
      assert.deepEqual(s.unmatched, []);
    },
  );
});

test('getJson classifies statuses', async () => {
  const cases: Array<[number, new (...a: never[]) => Error, string]> = [
    [401, AuthError, 'auth_error'],
    [403, AuthError, 'auth_error'],
    [429, RateLimitedError, 'rate_limited'],
    [404, UpstreamError, 'upstream_error'],
    [500, UpstreamError, 'upstream_error'],
    [503, UpstreamError, 'upstream_error'],
    [408, TimeoutError, 'timeout'],
    [504, TimeoutError, 'timeout'],
  ];
  await withServer(
    cases.map(([status]) => ({ request: { path: `/s${status}` }, response: { status, body: { error: { message: `status ${status}` } } } })),
    async (s) => {
      const http = createHttpClient({ timeoutMs: 2000 });
      for (const [status, cls, code] of cases) {
        await assert.rejects(http.getJson(`${s.url}/s${status}`), (err: unknown) => {
          assert.ok(err instanceof cls, `${status} -> ${(err as Error).name}`);
          assert.equal((err as unknown as { code: string }).code, code);
          if (err instanceof AuthError || err instanceof UpstreamError) assert.equal(err.upstreamStatus, status);
          return true;
        });
      }
    },
  );
});

test('getJson: malformed JSON is an UpstreamError; request() returns any status', async () => {
  await withServer(
    [
      { request: { path: '/bad' }, response: { body_text: '{not json' } },
      { request: { path: '/teapot' }, response: { status: 418, body_text: 'short and stout' } },
    ],
    async (s) => {
      const http = createHttpClient({ timeoutMs: 2000 });
      await assert.rejects(http.getJson(`${s.url}/bad`), (e: unknown) => e instanceof UpstreamError && /malformed JSON/.test(e.message));
      const res = await http.request(`${s.url}/teapot`);
      assert.equal(res.status, 418);
      assert.equal(res.text, 'short and stout');
      assert.throws(() => res.json(), UpstreamError);
    },
  );
});

test('error messages are scrubbed of secrets', async () => {
  const secret = 'very-secret-value-123456';
  await withServer(
    [{ request: { path: '/x' }, response: { status: 401, body: { error: { message: `key ${secret} and sk-or-v1-abcdefghijkl rejected` } } } }],
    async (s) => {
      const http = createHttpClient({ timeoutMs: 2000, secrets: [secret] });
      await assert.rejects(http.getJson(`${s.url}/x`), (e: unknown) => {
        assert.ok(e instanceof AuthError);
        assert.ok(!e.message.includes(secret), e.message);
        assert.ok(!e.message.includes('sk-or-v1-abcdefghijkl'), e.message);
        assert.match(e.message, /\[REDACTED\]/);
        return true;
      });
    },
  );
});

test('timeouts: the client default, a per-request override, and the abort signal', async () => {
  await withServer([{ request: { path: '/hang' }, response: { hang: true }, repeat: true }], async (s) => {
    let t = Date.now();
    await assert.rejects(createHttpClient({ timeoutMs: 100 }).request(`${s.url}/hang`), TimeoutError);
    assert.ok(Date.now() - t < 1500);

    t = Date.now();
    await assert.rejects(createHttpClient({ timeoutMs: 30_000 }).getJson(`${s.url}/hang`, { timeoutMs: 100 }), TimeoutError);
    assert.ok(Date.now() - t < 1500);

    const controller = new AbortController();
    const http = createHttpClient({ timeoutMs: 30_000, signal: controller.signal });
    setTimeout(() => controller.abort(), 100);
    t = Date.now();
    await assert.rejects(http.request(`${s.url}/hang`), TimeoutError);
    assert.ok(Date.now() - t < 1500);
    // An already aborted signal fails at once.
    await assert.rejects(http.request(`${s.url}/hang`), TimeoutError);
  });
});

test('responses above maxResponseBytes fail instead of filling memory', async () => {
  await withServer(
    [
      { request: { path: '/big' }, response: { body_text: 'x'.repeat(50_000) } },
      { request: { path: '/small' }, response: { body_text: 'x'.repeat(1000) } },
    ],
    async (s) => {
      const http = createHttpClient({ timeoutMs: 2000, maxResponseBytes: 10_000 });
      await assert.rejects(http.request(`${s.url}/big`), (e: unknown) => e instanceof UpstreamError && /exceeded 10000 bytes/.test(e.message));
      assert.equal((await http.request(`${s.url}/small`)).text.length, 1000);
    },
  );
});

test('redirects: followed on the same host with credentials; stripped on a host change', async () => {
  const other = await startFixtureServer([{ request: { path: '/landing' }, response: { body: { where: 'other' } } }]);
  try {
    await withServer(
      [
        { request: { path: '/same' }, response: { status: 302, headers: { location: '/here' } } },
        { request: { path: '/here', headers: { authorization: 'Bearer k' } }, response: { body: { where: 'same' } } },
        { request: { path: '/away' }, response: { status: 307, headers: { location: `${other.url}/landing` } } },
      ],
      async (s) => {
        const http = createHttpClient({ timeoutMs: 2000 });
        const headers = { authorization: 'Bearer k', cookie: 'c=1', 'x-api-key': 'kkkkkkkk', 'x-keep': 'yes' };
        const same = await http.getJson<{ where: string }>(`${s.url}/same`, { headers });
        assert.equal(same.where, 'same');
        assert.equal(s.requests[1]!.headers.cookie, 'c=1');

        const res = await http.request(`${s.url}/away`, { headers });
        assert.equal(res.url, `${other.url}/landing`);
        const landed = other.requests[0]!;
        assert.equal(landed.headers.authorization, undefined);
        assert.equal(landed.headers.cookie, undefined);
        assert.equal(landed.headers['x-api-key'], undefined);
        assert.equal(landed.headers['x-keep'], 'yes');
      },
    );
  } finally {
    await other.close();
  }
});

test('redirects: 303 turns a POST into a GET without body; loops stop', async () => {
  await withServer(
    [
      { request: { method: 'POST', path: '/submit' }, response: { status: 303, headers: { location: '/result' } } },
      { request: { method: 'GET', path: '/result' }, response: { body: { ok: true } } },
      { request: { path: '/loop' }, response: { status: 302, headers: { location: '/loop' } }, repeat: true },
    ],
    async (s) => {
      const http = createHttpClient({ timeoutMs: 2000, maxRedirects: 3 });
      assert.deepEqual(await http.getJson(`${s.url}/submit`, { method: 'POST', json: { a: 1 } }), { ok: true });
      assert.equal(s.requests[1]!.body, null);
      assert.equal(s.requests[1]!.headers['content-type'], undefined);
      await assert.rejects(http.request(`${s.url}/loop`), (e: unknown) => e instanceof UpstreamError && /Too many redirects/.test(e.message));
      assert.equal(s.requests.filter((r) => r.path === '/loop').length, 4);
    },
  );
});

test('only http and https; invalid URLs are a ConfigError', async () => {
  const http = createHttpClient({ timeoutMs: 1000 });
  await assert.rejects(http.request('ftp://example.com/x'), ConfigError);
  await assert.rejects(http.request('file:///etc/passwd'), ConfigError);
  await assert.rejects(http.request('not a url'), ConfigError);
});

test('a refused connection is an UpstreamError', async () => {
  const server = await startFixtureServer([]);
  const url = server.url;
  await server.close();
  await assert.rejects(createHttpClient({ timeoutMs: 2000 }).request(`${url}/x`), (e: unknown) => e instanceof UpstreamError && /Network error/.test(e.message));
});

test('parseRetryAfter: seconds and HTTP dates', () => {
  const now = new Date('2026-11-20T12:00:00Z');
  assert.equal(parseRetryAfter('7', now), 7000);
  assert.equal(parseRetryAfter(' 30 ', now), 30_000);
  assert.equal(parseRetryAfter('1.5', now), 1500);
  assert.equal(parseRetryAfter('0', now), 0);
  assert.equal(parseRetryAfter('Fri, 20 Nov 2026 12:01:30 GMT', now), 90_000);
  assert.equal(parseRetryAfter('Fri, 20 Nov 2026 11:00:00 GMT', now), 0); // in the past
  assert.equal(parseRetryAfter('soon', now), null);
  assert.equal(parseRetryAfter('', now), null);
  assert.equal(parseRetryAfter(undefined, now), null);
  assert.equal(parseRetryAfter(null, now), null);
});

test('getJson: 429 carries Retry-After in seconds or as an HTTP date', async () => {
  const at = new Date(Date.now() + 120_000).toUTCString();
  await withServer(
    [
      { request: { path: '/secs' }, response: { status: 429, headers: { 'retry-after': '7' } } },
      { request: { path: '/date' }, response: { status: 429, headers: { 'retry-after': at } } },
      { request: { path: '/none' }, response: { status: 429 } },
    ],
    async (s) => {
      const http = createHttpClient({ timeoutMs: 2000 });
      const retry = async (path: string) => {
        try {
          await http.getJson(`${s.url}${path}`);
        } catch (e) {
          assert.ok(e instanceof RateLimitedError);
          return e.retryAfterMs;
        }
        assert.fail('expected a RateLimitedError');
      };
      assert.equal(await retry('/secs'), 7000);
      const fromDate = await retry('/date');
      assert.ok(fromDate !== null && fromDate > 110_000 && fromDate <= 120_000, String(fromDate));
      assert.equal(await retry('/none'), null);
    },
  );
});

test('onRequest reports every request with its outcome', async () => {
  await withServer([{ request: { path: '/a' }, response: { status: 204 } }], async (s) => {
    const seen: Array<{ method: string; url: string; status: number | null }> = [];
    const http = createHttpClient({ timeoutMs: 2000, onRequest: ({ method, url, status }) => seen.push({ method, url, status }) });
    await http.request(`${s.url}/a`);
    await http.request(`${s.url}/b`);
    assert.deepEqual(seen, [
      { method: 'GET', url: `${s.url}/a`, status: 204 },
      { method: 'GET', url: `${s.url}/b`, status: 599 },
    ]);
  });
});
