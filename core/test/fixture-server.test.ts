import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startFixtureServer, UNMATCHED_STATUS, isDeepSubset } from '../src/testing/index.js';

async function send(url: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}) {
  const res = await fetch(url, init);
  return { status: res.status, headers: res.headers, text: await res.text() };
}

test('serves a matching entry and records the request', async () => {
  const server = await startFixtureServer([
    {
      name: '01-key.json',
      request: { method: 'POST', path: '/key', query: { limit: '31' }, headers: { authorization: 'Bearer k' }, body: { a: { b: 1 } } },
      response: { status: 201, headers: { 'X-Request-Id': 'r1' }, body: { ok: true } },
    },
  ]);
  try {
    const res = await send(`${server.url}/key?limit=31&extra=1`, {
      method: 'POST',
      headers: { authorization: 'Bearer k', 'content-type': 'application/json', 'x-other': 'y' },
      body: JSON.stringify({ a: { b: 1, c: 2 }, d: [1] }),
    });
    assert.equal(res.status, 201);
    assert.equal(res.headers.get('x-request-id'), 'r1');
    assert.equal(res.headers.get('content-type'), 'application/json');
    assert.deepEqual(JSON.parse(res.text), { ok: true });
    assert.equal(server.requests.length, 1);
    const r = server.requests[0]!;
    assert.equal(r.method, 'POST');
    assert.equal(r.path, '/key');
    assert.deepEqual(r.query, { limit: '31', extra: '1' });
    assert.equal(r.headers.authorization, 'Bearer k');
    assert.deepEqual(r.body, { a: { b: 1, c: 2 }, d: [1] });
    assert.equal(r.matched, '01-key.json');
    assert.deepEqual(server.unused(), []);
  } finally {
    await server.close();
  }
});

test('answers unmatched requests with 599 and says why', async () => {
  const server = await startFixtureServer([
    { name: 'a', request: { path: '/key', headers: { authorization: 'Bearer right' } }, response: { body: {} } },
    { name: 'b', request: { method: 'POST', path: '/other' }, response: { body: {} } },
  ]);
  try {
    const res = await send(`${server.url}/key?x=1`, { headers: { authorization: 'Bearer wrong' } });
    assert.equal(res.status, UNMATCHED_STATUS);
    const body = JSON.parse(res.text) as { error: { message: string; candidates: string[] } };
    assert.match(body.error.message, /no recorded response matches GET \/key/);
    // The response body names the header, never the expected value (it may be a secret).
    assert.ok(!res.text.includes('Bearer right'));
    assert.equal(server.unmatched.length, 1);
    assert.match(server.unmatched[0]!.reason, /a: header authorization has a different value/);
    assert.match(server.unmatched[0]!.reason, /b: method POST expected, got GET; path \/other expected, got \/key/);
    assert.deepEqual(server.unused().map((e) => e.name), ['a', 'b']);
  } finally {
    await server.close();
  }
});

test('serves entries for the same request in order; repeat serves again', async () => {
  const server = await startFixtureServer([
    { name: 'page1', request: { path: '/items' }, response: { body: { page: 1 } } },
    { name: 'page2', request: { path: '/items' }, response: { body: { page: 2 } } },
    { name: 'forever', request: { path: '/ping' }, response: { body: 'pong' }, repeat: true },
    { name: 'never', request: { path: '/never' }, response: { body: {} }, optional: true },
  ]);
  try {
    assert.equal((await send(`${server.url}/items`)).text, '{"page":1}');
    assert.equal((await send(`${server.url}/items`)).text, '{"page":2}');
    const third = await send(`${server.url}/items`);
    assert.equal(third.status, 599);
    assert.match(server.unmatched[0]!.reason, /page1: matches, but was already served/);
    for (let i = 0; i < 3; i++) assert.equal((await send(`${server.url}/ping`)).text, '"pong"');
    assert.deepEqual(server.unused().map((e) => [e.name, e.optional]), [['never', true]]);
  } finally {
    await server.close();
  }
});

test('query in the path, repeated keys, form bodies, raw bodies, base path', async () => {
  const server = await startFixtureServer(
    [
      { name: 'q', request: { path: '/search?kind=a', query: { tag: ['x', 'y'] } }, response: { body_text: 'plain' } },
      { name: 'form', request: { method: 'POST', path: '/token', body: { grant_type: 'refresh_token' } }, response: { body: { ok: 1 } } },
    ],
    { basePath: '/api/v1/' },
  );
  try {
    const q = await send(`${server.url}/api/v1/search?kind=a&tag=x&tag=y`);
    assert.equal(q.text, 'plain');
    assert.equal(q.headers.get('content-type'), null);
    const f = await send(`${server.url}/api/v1/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=refresh_token&refresh_token=abc',
    });
    assert.equal(f.status, 200);
    assert.deepEqual(server.requests[1]!.body, { grant_type: 'refresh_token', refresh_token: 'abc' });
    assert.equal((await send(`${server.url}/search?kind=a&tag=x&tag=y`)).status, 599); // outside the base path
  } finally {
    await server.close();
  }
});

test('replaces {{base_url}} in entries with the server URL and base path', async () => {
  const server = await startFixtureServer(
    [{ request: { path: '/start' }, response: { status: 302, headers: { location: '{{base_url}}/next' }, body: { next: '{{base_url}}/next' } } }],
    { basePath: '/v2' },
  );
  try {
    const res = await fetch(`${server.url}/v2/start`, { redirect: 'manual' });
    assert.equal(res.headers.get('location'), `${server.url}/v2/next`);
    assert.deepEqual(await res.json(), { next: `${server.url}/v2/next` });
  } finally {
    await server.close();
  }
});

test('delay_ms delays; hang never answers and close() cuts it off', async () => {
  const server = await startFixtureServer([
    { request: { path: '/slow' }, response: { delay_ms: 150, body: { ok: true } } },
    { request: { path: '/hang' }, response: { hang: true } },
  ]);
  const t0 = Date.now();
  assert.equal((await send(`${server.url}/slow`)).status, 200);
  assert.ok(Date.now() - t0 >= 140);

  const pending = fetch(`${server.url}/hang`).then(
    () => 'answered',
    () => 'failed',
  );
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(server.requests.length, 2);
  const t1 = Date.now();
  await server.close();
  assert.ok(Date.now() - t1 < 1000, 'close() must not wait for hanging requests');
  assert.equal(await pending, 'failed');
  await server.close(); // idempotent
});

test('isDeepSubset', () => {
  assert.ok(isDeepSubset({ a: 1 }, { a: 1, b: 2 }));
  assert.ok(isDeepSubset({ a: { b: [1, { c: 2 }] } }, { a: { b: [1, { c: 2, d: 3 }], e: 1 } }));
  assert.ok(!isDeepSubset({ a: [1] }, { a: [1, 2] }));
  assert.ok(!isDeepSubset({ a: null }, {}));
  assert.ok(!isDeepSubset({ a: 1 }, { a: '1' }));
  assert.ok(isDeepSubset('text', 'text'));
});
