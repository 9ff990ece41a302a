import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  CODEX_NOW,
  codexUsage,
  codexUsageFree,
  deepseekBalance,
  deepseekBalanceInfo,
  openaiCompletionsResult,
  openaiBucket,
  openaiDailyCosts,
  openaiError,
  openaiPage,
  openrouterCredits,
  openrouterError,
  openrouterKey,
  startUpstreamMock,
  type UpstreamMock,
} from './upstream-mock.js';

async function withMock(t: { after: (fn: () => Promise<void>) => void }, opts?: Parameters<typeof startUpstreamMock>[0]): Promise<UpstreamMock> {
  const mock = await startUpstreamMock(opts);
  t.after(() => mock.close());
  return mock;
}

test('serves a route as JSON and records the request', async (t) => {
  const mock = await withMock(t);
  assert.match(mock.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  mock.route('GET', '/key', { body: openrouterKey({ usage_monthly: 12.5 }) });
  const res = await fetch(`${mock.url}/key?x=1&x=2&y=b`, { headers: { authorization: 'Bearer sk-or-v1-test-000000000001' } });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'application/json');
  const body = (await res.json()) as ReturnType<typeof openrouterKey>;
  assert.equal(body.data.usage_monthly, 12.5);
  assert.equal(body.data.limit, 50);

  mock.route('post', '/v1/things', { status: 201, body: { ok: true } });
  const posted = await fetch(`${mock.url}/v1/things`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'key-abcdef-123456' }, body: JSON.stringify({ a: [1] }) });
  assert.equal(posted.status, 201);
  await posted.arrayBuffer();

  const [get] = mock.requests('GET', '/key');
  assert.ok(get);
  assert.equal(get.method, 'GET');
  assert.equal(get.path, '/key');
  assert.deepEqual(get.query, { x: '1', y: 'b' });
  assert.equal(get.url, '/key?x=1&x=2&y=b');
  assert.equal(get.headers.authorization, 'Bearer sk-or-v1-test-000000000001');
  assert.equal(get.key, 'sk-or-v1-test-000000000001');
  assert.equal(get.body, null);
  assert.ok(typeof get.at === 'number' && get.at <= Date.now());
  const [post] = mock.requests('POST', '/v1/things');
  assert.deepEqual(post?.body, { a: [1] });
  assert.equal(post?.key, 'key-abcdef-123456');
  assert.equal(mock.count(), 2);
  assert.equal(mock.count('GET'), 1);
  assert.equal(mock.count('GET', '/key'), 1);
  assert.equal(mock.count(undefined, '/v1/things'), 1);
});

test('status codes, 429 with Retry-After, custom headers, unmatched routes', async (t) => {
  const mock = await withMock(t);
  mock.route('GET', '/limited', { status: 429, headers: { 'Retry-After': '30' }, body: { error: { message: 'slow down' } } });
  mock.route('GET', '/down', { status: 503, bodyText: '<html>bad gateway</html>', headers: { 'content-type': 'text/html' } });
  mock.route('GET', '/denied', { status: 401, body: openaiError() });

  const limited = await fetch(`${mock.url}/limited`);
  assert.equal(limited.status, 429);
  assert.equal(limited.headers.get('retry-after'), '30');
  assert.deepEqual(await limited.json(), { error: { message: 'slow down' } });

  const down = await fetch(`${mock.url}/down`);
  assert.equal(down.status, 503);
  assert.equal(down.headers.get('content-type'), 'text/html');
  assert.equal(await down.text(), '<html>bad gateway</html>');

  const denied = await fetch(`${mock.url}/denied`);
  assert.equal(denied.status, 401);
  assert.equal(((await denied.json()) as ReturnType<typeof openaiError>).error.code, 'invalid_api_key');

  const missing = await fetch(`${mock.url}/nope`);
  assert.equal(missing.status, 404);
  assert.match(JSON.stringify(await missing.json()), /no route for GET \/nope/);

  mock.fallback({ status: 418, bodyText: 'teapot' });
  const fallback = await fetch(`${mock.url}/nope`);
  assert.equal(fallback.status, 418);
  assert.equal(await fallback.text(), 'teapot');
});

test('malformed JSON via bodyText', async (t) => {
  const mock = await withMock(t);
  mock.route('GET', '/key', { bodyText: '{"data": {"usage": 1', headers: { 'content-type': 'application/json' } });
  const res = await fetch(`${mock.url}/key`);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'application/json');
  await assert.rejects(res.json(), SyntaxError);
});

test('sequence: successive replies, then the last one repeats; route() replaces it', async (t) => {
  const mock = await withMock(t);
  mock.sequence('GET', '/key', [{ status: 500, body: {} }, { status: 429, headers: { 'retry-after': '1' } }, { body: openrouterKey() }]);
  const statuses: number[] = [];
  for (let i = 0; i < 5; i++) {
    const r = await fetch(`${mock.url}/key`);
    await r.arrayBuffer();
    statuses.push(r.status);
  }
  assert.deepEqual(statuses, [500, 429, 200, 200, 200]);
  mock.route('GET', '/key', { status: 204 });
  assert.equal((await fetch(`${mock.url}/key`)).status, 204);
  assert.throws(() => mock.sequence('GET', '/key', []));
});

test('forKey: per-credential replies (Bearer, x-api-key, api_key query) over the route default', async (t) => {
  const mock = await withMock(t);
  mock.route('GET', '/key', { body: openrouterKey() });
  mock.forKey('sk-or-v1-revoked-00000001', 'GET', '/key', { status: 401, body: openrouterError(401) });
  mock.forKey('sk-or-v1-flaky-000000002', 'GET', '/key', [{ status: 500, body: {} }, { body: openrouterKey({ usage: 1 }) }]);
  mock.forKey('xkey-000000000003', 'GET', '/key', { body: openrouterKey({ usage: 3 }) });
  mock.forKey('qkey-000000000004', 'GET', '/key', { body: openrouterKey({ usage: 4 }) });

  const get = async (headers: Record<string, string>, qs = '') => {
    const r = await fetch(`${mock.url}/key${qs}`, { headers });
    return { status: r.status, body: (await r.json()) as { data?: { usage: number } } };
  };
  assert.equal((await get({ authorization: 'Bearer sk-or-v1-revoked-00000001' })).status, 401);
  assert.equal((await get({ authorization: 'Bearer sk-or-v1-flaky-000000002' })).status, 500);
  assert.equal((await get({ authorization: 'Bearer sk-or-v1-flaky-000000002' })).body.data?.usage, 1);
  assert.equal((await get({ authorization: 'Bearer sk-or-v1-flaky-000000002' })).body.data?.usage, 1);
  assert.equal((await get({ 'x-api-key': 'xkey-000000000003' })).body.data?.usage, 3);
  assert.equal((await get({}, '?api_key=qkey-000000000004')).body.data?.usage, 4);
  assert.equal((await get({ authorization: 'Bearer someone-else-0000005' })).body.data?.usage, 211.58);
  assert.equal((await get({})).body.data?.usage, 211.58);
  assert.equal(mock.requests('GET', '/key', 'sk-or-v1-flaky-000000002').length, 3);
});

test('a function reply sees the request (pagination by query)', async (t) => {
  const mock = await withMock(t);
  const start = 1785542400;
  mock.route('GET', '/v1/organization/costs', (req) =>
    req.query.page === 'p2'
      ? { body: openaiDailyCosts(start + 86_400, [['0.4120']]) }
      : { body: openaiDailyCosts(start, [[1.8342]], { has_more: true, next_page: 'p2' }) },
  );
  const first = (await (await fetch(`${mock.url}/v1/organization/costs?start_time=${start}`)).json()) as ReturnType<typeof openaiDailyCosts>;
  assert.equal(first.has_more, true);
  assert.equal(first.next_page, 'p2');
  const second = (await (await fetch(`${mock.url}/v1/organization/costs?start_time=${start}&page=p2`)).json()) as ReturnType<typeof openaiDailyCosts>;
  assert.equal(second.has_more, false);
  assert.equal(second.data[0]?.results[0]?.amount.value, '0.4120');
  assert.equal(second.data[0]?.start_time, start + 86_400);
  mock.route('GET', '/broken', () => {
    throw new Error('bad fixture');
  });
  const broken = await fetch(`${mock.url}/broken`);
  assert.equal(broken.status, 500);
  assert.match(await broken.text(), /upstream mock failed: Error: bad fixture/);
});

test('latency and delayMs slow replies down', async (t) => {
  const mock = await withMock(t, { latencyMs: 120 });
  mock.route('GET', '/a', { body: {} });
  mock.route('GET', '/b', { body: {}, delayMs: 150 });
  let t0 = performance.now();
  await (await fetch(`${mock.url}/a`)).arrayBuffer();
  assert.ok(performance.now() - t0 >= 110, 'latency applies');
  t0 = performance.now();
  await (await fetch(`${mock.url}/b`)).arrayBuffer();
  assert.ok(performance.now() - t0 >= 260, 'delayMs adds to latency');
  mock.setLatency(0);
  t0 = performance.now();
  await (await fetch(`${mock.url}/a`)).arrayBuffer();
  assert.ok(performance.now() - t0 < 100);
});

test('hang: never answers; the client can give up; close() does not wait for hanging requests', async () => {
  const mock = await startUpstreamMock();
  mock.route('GET', '/key', { hang: true });
  mock.route('GET', '/slow', { body: {}, delayMs: 60_000 });
  await assert.rejects(fetch(`${mock.url}/key`, { signal: AbortSignal.timeout(150) }), /abort|timeout/i);
  const settle = (p: Promise<Response>) => p.then((r) => r.status, (e: unknown) => e);
  const inFlight = [settle(fetch(`${mock.url}/key`)), settle(fetch(`${mock.url}/key`)), settle(fetch(`${mock.url}/slow`))];
  while (mock.stats().inFlight < 3) await new Promise((r) => setTimeout(r, 10));
  const t0 = performance.now();
  await mock.close();
  assert.ok(performance.now() - t0 < 1000, 'close returns promptly');
  for (const outcome of await Promise.all(inFlight)) assert.ok(outcome instanceof TypeError, `dropped, not answered: ${String(outcome)}`);
  assert.equal(mock.count('GET', '/key'), 3);
  await mock.close(); // idempotent
});

test('huge bodies: exact size, valid JSON, with or without content-length', async (t) => {
  const mock = await withMock(t);
  const size = 5 * 1024 * 1024 + 7;
  mock.route('GET', '/huge', { bodyBytes: size });
  mock.route('GET', '/huge-chunked', { bodyBytes: size, chunked: true });
  const res = await fetch(`${mock.url}/huge`);
  assert.equal(res.headers.get('content-length'), String(size));
  const text = await res.text();
  assert.equal(text.length, size);
  assert.equal((JSON.parse(text) as { padding: string }).padding.length, size - 14);
  const chunked = await fetch(`${mock.url}/huge-chunked`);
  assert.equal(chunked.headers.get('content-length'), null);
  assert.equal(chunked.headers.get('transfer-encoding'), 'chunked');
  assert.equal((await chunked.arrayBuffer()).byteLength, size);
  // a client that gives up early does not break the mock
  const ac = new AbortController();
  const partial = await fetch(`${mock.url}/huge`, { signal: ac.signal });
  const reader = partial.body!.getReader();
  await reader.read();
  ac.abort();
  assert.equal((await fetch(`${mock.url}/huge-chunked`).then((r) => r.arrayBuffer())).byteLength, size);
});

test('destroy drops the connection without a response', async (t) => {
  const mock = await withMock(t);
  mock.route('GET', '/key', { destroy: true });
  await assert.rejects(fetch(`${mock.url}/key`), TypeError);
});

test('clearRequests keeps routes; reset forgets everything', async (t) => {
  const mock = await withMock(t);
  mock.route('GET', '/key', { body: { n: 1 } });
  mock.forKey('k-000000000001', 'GET', '/key', { body: { n: 2 } });
  await (await fetch(`${mock.url}/key`)).arrayBuffer();
  mock.clearRequests();
  assert.equal(mock.count(), 0);
  assert.deepEqual(mock.requests(), []);
  assert.equal((await fetch(`${mock.url}/key`)).status, 200);
  mock.reset();
  assert.equal(mock.count(), 0);
  assert.equal((await fetch(`${mock.url}/key`, { headers: { authorization: 'Bearer k-000000000001' } })).status, 404);
});

test('1000 concurrent connections with distinct keys each get their own reply', async (t) => {
  const mock = await withMock(t, { latencyMs: 200, record: false });
  const N = 1000;
  const keys = Array.from({ length: N }, (_, i) => `sk-or-v1-bench-${String(i).padStart(6, '0')}`);
  mock.route('GET', '/key', { status: 500, body: {} });
  keys.forEach((k, i) => mock.forKey(k, 'GET', '/key', { body: openrouterKey({ usage: i }) }));
  const t0 = performance.now();
  const results = await Promise.all(
    keys.map(async (k) => {
      const r = await fetch(`${mock.url}/key`, { headers: { authorization: `Bearer ${k}` } });
      return { status: r.status, usage: ((await r.json()) as ReturnType<typeof openrouterKey>).data.usage };
    }),
  );
  const elapsed = performance.now() - t0;
  assert.deepEqual(
    results.map((r) => r.status),
    keys.map(() => 200),
  );
  assert.deepEqual(
    results.map((r) => r.usage),
    keys.map((_, i) => i),
  );
  assert.equal(mock.count('GET', '/key'), N);
  assert.deepEqual(mock.requests(), [], 'record: false keeps no requests');
  const { maxInFlight } = mock.stats();
  t.diagnostic(`1000 requests in ${elapsed.toFixed(0)} ms, max in flight ${maxInFlight}`);
  assert.ok(maxInFlight >= 500, `requests overlapped (max in flight ${maxInFlight})`);
  assert.ok(elapsed < 10_000);
});

test('provider body helpers use the real shapes', () => {
  const key = openrouterKey({ limit: null, limit_remaining: null, limit_reset: null });
  assert.equal(key.data.limit, null);
  assert.equal(typeof key.data.usage_daily, 'number');
  assert.deepEqual(openrouterCredits({ total_usage: 1 }), { data: { total_credits: 120, total_usage: 1 } });
  assert.deepEqual(openrouterError(), { error: { code: 401, message: 'User not found.' } });

  const info = deepseekBalanceInfo('CNY', '110.00', '10.00');
  assert.deepEqual(info, { currency: 'CNY', total_balance: '110.00', granted_balance: '10.00', topped_up_balance: '100.00' });
  assert.deepEqual(deepseekBalance({ is_available: false }).balance_infos[0]?.total_balance, '23.87');

  const page = openaiPage([openaiBucket(1785542400, 1785628800, [openaiCompletionsResult({ model: 'gpt-5-mini' })])]);
  assert.equal(page.object, 'page');
  assert.equal(page.data[0]?.results[0]?.object, 'organization.usage.completions.result');
  assert.equal(page.next_page, null);

  const plus = codexUsage();
  assert.equal(plus.rate_limit.primary_window?.limit_window_seconds, 18_000);
  assert.equal(plus.rate_limit.primary_window?.reset_at, CODEX_NOW + 9_840);
  assert.equal(plus.rate_limit.secondary_window?.limit_window_seconds, 604_800);
  assert.equal(typeof plus.credits.balance, 'string');
  const free = codexUsageFree();
  assert.equal(free.rate_limit.primary_window?.limit_window_seconds, 604_800);
  assert.equal(free.rate_limit.secondary_window, null);
});
