import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, createHttpClient, isBlockedAddress, isHostAllowListed, normalizeHost, parseHostList } from '../src/index.js';
import { startFixtureServer } from '../src/testing/index.js';

test('blocked addresses: loopback, private, link-local, reserved, multicast, mapped', () => {
  const blocked = [
    '127.0.0.1',
    '127.255.255.254',
    '10.0.0.1',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254', // cloud metadata
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '::1',
    '::',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1', // the same, in hex
    '::ffff:169.254.169.254',
    'fc00::1',
    'fd12:3456::1',
    'fe80::1',
    'fe80::1%eth0',
    'ff02::1',
    '64:ff9b::a00:1', // NAT64 of 10.0.0.1
    '2002:7f00:1::', // 6to4 of 127.0.0.1
    'not-an-ip',
  ];
  for (const ip of blocked) assert.equal(isBlockedAddress(ip), true, ip);
  const allowed = ['8.8.8.8', '1.1.1.1', '93.184.216.34', '172.32.0.1', '192.169.0.1', '2606:4700:4700::1111', '2a00:1450:4001::200e', '::ffff:8.8.8.8'];
  for (const ip of allowed) assert.equal(isBlockedAddress(ip), false, ip);
});

test('allow-list: host names and literals, normalized', () => {
  const policy = { allowedHosts: ['Internal.Example', '127.0.0.1', '[::1]'] };
  assert.equal(isHostAllowListed('internal.example.', policy), true);
  assert.equal(isHostAllowListed('INTERNAL.example', policy), true);
  assert.equal(isHostAllowListed('127.0.0.1', policy), true);
  assert.equal(isHostAllowListed('::1', policy), true);
  assert.equal(isHostAllowListed('other.example', policy), false);
  assert.equal(normalizeHost(' [FE80::1] '), 'fe80::1');
  assert.deepEqual(parseHostList(' a.example:8080, B.example ,,127.0.0.1 '), ['a.example', 'b.example', '127.0.0.1']);
  assert.deepEqual(parseHostList(undefined), []);
});

test('with a host policy, literal private addresses are refused before connecting', async () => {
  const http = createHttpClient({ timeoutMs: 1000, hostPolicy: { allowedHosts: [] } });
  for (const url of ['http://127.0.0.1:9/x', 'http://10.0.0.1/x', 'http://169.254.169.254/latest/meta-data/', 'http://[::1]:9/', 'http://[::ffff:127.0.0.1]:9/', 'http://[fc00::1]/']) {
    await assert.rejects(http.request(url), (e: unknown) => e instanceof ConfigError && /is not allowed/.test(e.message), url);
  }
  await assert.rejects(http.request('http://user:pw@example.com/'), (e: unknown) => e instanceof ConfigError && /credentials/.test(e.message));
});

test('with a host policy, a name resolving to loopback is refused unless allow-listed', async () => {
  const server = await startFixtureServer([{ request: { path: '/ok' }, response: { body: { ok: true } }, repeat: true }]);
  const port = new URL(server.url).port;
  try {
    const strict = createHttpClient({ timeoutMs: 2000, hostPolicy: { allowedHosts: [] } });
    await assert.rejects(strict.request(`http://localhost:${port}/ok`), (e: unknown) => e instanceof ConfigError && /resolves to a blocked address/.test(e.message));
    assert.equal(server.requests.length, 0);

    const allowed = createHttpClient({ timeoutMs: 2000, hostPolicy: { allowedHosts: ['localhost', '127.0.0.1'] } });
    assert.deepEqual(await allowed.getJson(`http://localhost:${port}/ok`), { ok: true });
    assert.deepEqual(await allowed.getJson(`http://127.0.0.1:${port}/ok`), { ok: true });

    // Without a policy (plugins with fixed upstream hosts) nothing is checked.
    assert.deepEqual(await createHttpClient({ timeoutMs: 2000 }).getJson(`${server.url}/ok`), { ok: true });
  } finally {
    await server.close();
  }
});

test('a redirect from an allowed host to a blocked address is refused', async () => {
  const server = await startFixtureServer([
    { request: { path: '/meta' }, response: { status: 302, headers: { location: 'http://169.254.169.254/latest/meta-data/' } } },
    { request: { path: '/private' }, response: { status: 307, headers: { location: 'http://10.0.0.1/admin' } } },
    { request: { path: '/v6' }, response: { status: 301, headers: { location: 'http://[::1]/' } } },
    { request: { path: '/name' }, response: { status: 302, headers: { location: 'http://localhost/' } } },
  ]);
  try {
    const http = createHttpClient({ timeoutMs: 2000, hostPolicy: { allowedHosts: ['127.0.0.1'] } });
    for (const [path, pattern] of [
      ['/meta', /169\.254\.169\.254 is not allowed/],
      ['/private', /10\.0\.0\.1 is not allowed/],
      ['/v6', /::1 is not allowed/],
      ['/name', /localhost resolves to a blocked address/],
    ] as const) {
      await assert.rejects(http.request(`${server.url}${path}`), (e: unknown) => e instanceof ConfigError && pattern.test(e.message), path);
    }
    assert.equal(server.requests.length, 4);
  } finally {
    await server.close();
  }
});
