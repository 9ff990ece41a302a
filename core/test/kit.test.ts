/**
 * Self-tests of the conformance kit: a correct plugin passes, and each deliberately broken plugin
 * is caught by the check that exists to catch it.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { AuthError, UpstreamError, type ProviderUsage } from '../src/index.js';
import { checkPlugin, type ConformanceReport } from '../src/testing/index.js';
import { acme, acmeCases, API_KEY, goodFetch, readUsage, removeCases, toUsage, writeCases, type Files } from './support/acme.js';

const dirs: string[] = [];
after(() => dirs.forEach(removeCases));

function cases(files: Files = acmeCases()): string {
  const dir = writeCases(files);
  dirs.push(dir);
  return dir;
}

/** Failures as `check|case|message` lines, for readable assertion messages. */
const lines = (r: ConformanceReport) => r.failures.map((f) => `${f.check}|${f.case}|${f.message}`);

function assertCaught(r: ConformanceReport, check: string, pattern: RegExp, caseName?: string): void {
  const hit = r.failures.some((f) => f.check === check && pattern.test(f.message) && (caseName === undefined || f.case === caseName));
  assert.ok(hit, `expected a ${check} failure matching ${pattern}${caseName ? ` in ${caseName}` : ''}; got:\n${lines(r).join('\n')}`);
  assert.equal(r.ok, false);
}

describe('a correct plugin', () => {
  test('passes every check', async () => {
    const r = await checkPlugin(acme(), { dir: cases() });
    assert.deepEqual(lines(r), []);
    assert.equal(r.ok, true);
    assert.deepEqual(
      r.cases.map((c) => [c.name, c.ok]),
      [
        ['healthy', true],
        ['unauthorized', true],
        ['unlimited', true],
      ],
    );
    assert.ok(r.checks.every((c) => c.status === 'passed'));
    assert.equal(r.cases[0]?.requests[0]?.headers.authorization, `Bearer ${API_KEY}`);
  });

  test('accepts a file: URL as dir and reports skipped checks with their reason', async () => {
    const dir = cases();
    const r = await checkPlugin(acme(), { dir: new URL(`file://${dir}/`), skip: { missing_fields: 'every field is optional' } });
    assert.equal(r.ok, true, lines(r).join('\n'));
    assert.deepEqual(r.checks.find((c) => c.name === 'missing_fields'), { name: 'missing_fields', status: 'skipped', reason: 'every field is optional' });
  });
});

describe('metric types and units', () => {
  test('a string value for a USD metric', async () => {
    const r = await checkPlugin(
      acme({
        async fetchUsage(ctx) {
          const u = toUsage(await readUsage(ctx));
          return { ...u, metrics: u.metrics.map((m) => (m.label === 'Used' ? { ...m, value: String(m.value) } : m)) };
        },
      }),
      { dir: cases() },
    );
    assertCaught(r, 'metric_specs', /"Used": a USD metric must be a finite number or null \(got "12.5"\)/, 'healthy');
    assertCaught(r, 'case', /"Used": value expected 12.5, got "12.5"/, 'healthy');
  });

  test('an undeclared label and a wrong unit', async () => {
    const r = await checkPlugin(
      acme({
        async fetchUsage(ctx) {
          const u = toUsage(await readUsage(ctx));
          const metrics = u.metrics.map((m) => (m.label === 'Limit' ? { ...m, unit: 'EUR' } : m));
          return { ...u, metrics: [...metrics, { label: 'Bonus', value: 1, unit: 'USD', maximum: null }] };
        },
      }),
      { dir: cases() },
    );
    assertCaught(r, 'metric_specs', /"Bonus" is not declared/);
    assertCaught(r, 'metric_specs', /"Limit": unit "EUR" differs from the declared unit "USD"/);
    assertCaught(r, 'case', /unexpected "Bonus"/);
  });

  test('a datetime metric that is not an ISO string, and a percent above 100', async () => {
    const r = await checkPlugin(
      acme({
        metrics: { ...acme().metrics, Share: { type: 'percent_used', unit: 'percent', direction: 'increasing' } },
        async fetchUsage(ctx) {
          const u = toUsage(await readUsage(ctx));
          const metrics = u.metrics.map((m) => (m.label === 'Resets at' && m.value ? { ...m, value: 1764547200 } : m));
          return { ...u, metrics: [...metrics, { label: 'Share', value: 140, unit: 'percent', maximum: 100 }] };
        },
      }),
      { dir: cases() },
    );
    assertCaught(r, 'metric_specs', /"Resets at": a datetime metric must be an ISO 8601 string or null \(got 1764547200\)/);
    assertCaught(r, 'metric_specs', /"Share": a percent_used value must be within 0..100/);
  });

  test('a missing value reported as 0 instead of null', async () => {
    const r = await checkPlugin(
      acme({
        async fetchUsage(ctx) {
          const u = toUsage(await readUsage(ctx));
          return { ...u, metrics: u.metrics.map((m) => (m.unit === 'USD' ? { ...m, value: m.value ?? 0 } : m)).filter((m) => m.value !== null) };
        },
      }),
      { dir: cases() },
    );
    assertCaught(r, 'case', /"Limit": value expected null, got 0/, 'unlimited');
    assertCaught(r, 'null_preservation', /no testcase returns a metric with value null/);
  });

  test('a result that breaks the ProviderUsage schema', async () => {
    const r = await checkPlugin(
      acme({
        async fetchUsage(ctx) {
          const u = toUsage(await readUsage(ctx));
          return { ...u, status: 'ok', extra: true } as unknown as ProviderUsage;
        },
      }),
      { dir: cases() },
    );
    assertCaught(r, 'case', /result\/status: must be one of "healthy", "degraded"/);
    assertCaught(r, 'case', /result\/extra: is not an allowed property/);
  });
});

describe('dynamic metrics', () => {
  test('results are checked against metricsFor(settings) when the plugin has it', async () => {
    const files = acmeCases();
    files['healthy/settings.json'] = { unit: 'EUR' };
    // A plugin whose metric units come from the settings; it forgets to apply them to "Limit".
    const plugin = {
      ...acme({
        settings: { type: 'object', properties: { unit: { type: 'string', default: 'USD' } } },
        async fetchUsage(ctx) {
          const unit = (ctx.settings as { unit: string }).unit;
          const u = toUsage(await readUsage(ctx));
          return { ...u, metrics: u.metrics.map((m) => (m.label === 'Used' ? { ...m, unit } : m)) };
        },
      }),
      capabilities: { dynamic_metrics: true },
      metricsFor: (settings: { unit: string }) => ({
        Used: { type: 'counter', unit: settings.unit, direction: 'increasing' },
        Limit: { type: 'gauge', unit: settings.unit, direction: 'increasing' },
        'Resets at': { type: 'gauge', unit: 'datetime', direction: 'increasing' },
      }),
    } as unknown as ReturnType<typeof acme>;
    (files['healthy/expected.json'] as { metrics: Array<{ unit: string; label: string }> }).metrics[0]!.unit = 'EUR';
    const r = await checkPlugin(plugin, { dir: cases(files) });
    assertCaught(r, 'metric_specs', /"Limit": unit "USD" differs from the declared unit "EUR"/, 'healthy');
    // The other cases use the default unit, USD, and pass.
    assert.ok(!r.failures.some((f) => f.check === 'metric_specs' && f.case !== 'healthy'), lines(r).join('\n'));
  });
});

describe('secret leaks', () => {
  test('the api key in the summary', async () => {
    const r = await checkPlugin(
      acme({
        async fetchUsage(ctx) {
          const u = toUsage(await readUsage(ctx));
          return { ...u, summary: `${u.summary} (key ${ctx.credentials.api_key})` };
        },
      }),
      { dir: cases() },
    );
    assertCaught(r, 'secret_leak', /result\.summary contains the credential value acme…\(30 chars\)/, 'healthy');
    // The report names the secret without printing it.
    assert.ok(r.failures.every((f) => !f.message.includes(API_KEY)));
  });

  test('the api key in raw', async () => {
    const r = await checkPlugin(
      acme({
        async fetchUsage(ctx) {
          const u = toUsage(await readUsage(ctx));
          return { ...u, raw: { request: { headers: { authorization: `Bearer ${ctx.credentials.api_key}` } } } };
        },
      }),
      { dir: cases() },
    );
    assertCaught(r, 'secret_leak', /result\.raw contains the credential value/);
  });

  test('the api key in a log line', async () => {
    const r = await checkPlugin(
      acme({
        async fetchUsage(ctx) {
          ctx.logger.debug('calling acme', { key: ctx.credentials.api_key });
          return goodFetch(ctx);
        },
      }),
      { dir: cases() },
    );
    assertCaught(r, 'secret_leak', /the debug log line "calling acme" contains the credential value/);
  });

  test('the api key in an error message (also in the generic runs)', async () => {
    const r = await checkPlugin(
      acme({
        async fetchUsage(ctx) {
          try {
            return await goodFetch(ctx);
          } catch (err) {
            if (err instanceof AuthError) throw new AuthError(`key ${ctx.credentials.api_key} was rejected`, 401);
            throw err;
          }
        },
      }),
      { dir: cases() },
    );
    assertCaught(r, 'secret_leak', /the error message contains the credential value/, 'unauthorized');
    assertCaught(r, 'secret_leak', /the error message contains/, 'healthy [auth_401]');
  });

  test('rotated credentials in result.credentials are not a leak', async () => {
    const r = await checkPlugin(
      acme({
        async fetchUsage(ctx) {
          return { ...(await goodFetch(ctx)), credentials: { api_key: ctx.credentials.api_key } };
        },
      }),
      { dir: cases() },
    );
    assert.deepEqual(lines(r), []);
  });
});

describe('error classification', () => {
  test('a swallowed 401', async () => {
    const r = await checkPlugin(
      acme({
        async fetchUsage(ctx) {
          try {
            return await goodFetch(ctx);
          } catch (err) {
            if (err instanceof AuthError) return toUsage({ used: null, limit: null, resets_at: null });
            throw err;
          }
        },
      }),
      { dir: cases() },
    );
    assertCaught(r, 'case', /expected error auth_error, but fetchUsage returned a healthy result/, 'unauthorized');
    assertCaught(r, 'auth_401', /gets HTTP 401, expected auth_error, but fetchUsage returned a healthy result .*was the error swallowed\?/);
    assertCaught(r, 'auth_403', /gets HTTP 403, expected auth_error/);
    assert.equal(r.checks.find((c) => c.name === 'rate_limited')?.status, 'passed');
  });

  test('a plain Error instead of a classified one', async () => {
    const r = await checkPlugin(
      acme({
        async fetchUsage(ctx) {
          const res = await ctx.http.request(`${ctx.baseUrl}/usage`, { headers: { authorization: `Bearer ${ctx.credentials.api_key}` } });
          if (res.status !== 200) throw new Error(`acme answered ${res.status}`);
          const body = res.json<{ data?: { used?: number } }>();
          if (!body.data) throw new Error('no data');
          return toUsage(body.data);
        },
      }),
      { dir: cases() },
    );
    assertCaught(r, 'classified_errors', /threw an unclassified Error: acme answered 401; plugins must throw core errors/, 'unauthorized');
    assertCaught(r, 'case', /expected error auth_error, got an unclassified Error/, 'unauthorized');
    assertCaught(r, 'auth_401', /expected auth_error, got an unclassified Error: acme answered 401/);
    assertCaught(r, 'rate_limited', /expected rate_limited, got an unclassified Error/);
    assertCaught(r, 'missing_fields', /expected schema_drift, got an unclassified Error: no data/);
  });

  test('a TypeError from reading a field that is gone', async () => {
    const r = await checkPlugin(
      acme({
        async fetchUsage(ctx) {
          const body = await ctx.http.getJson<{ data: { used: number } }>(`${ctx.baseUrl}/usage`, {
            headers: { authorization: `Bearer ${ctx.credentials.api_key}` },
          });
          return toUsage({ used: body.data.used });
        },
      }),
      { dir: cases() },
    );
    assertCaught(r, 'missing_fields', /expected schema_drift, got an unclassified TypeError/);
    assertCaught(r, 'classified_errors', /TypeError/);
  });

  test('a Retry-After that is dropped', async () => {
    const r = await checkPlugin(
      acme({
        async fetchUsage(ctx) {
          try {
            return await goodFetch(ctx);
          } catch (err) {
            if ((err as { code?: string }).code === 'rate_limited') throw new (await import('../src/index.js')).RateLimitedError('slow down');
            throw err;
          }
        },
      }),
      { dir: cases() },
    );
    assertCaught(r, 'rate_limited', /expected retryAfterMs 7000 \(from Retry-After\), got null/);
  });

  test('a plugin that ignores ctx.signal and never settles', async () => {
    const r = await checkPlugin(
      acme({
        async fetchUsage(ctx) {
          try {
            return await goodFetch(ctx);
          } catch (err) {
            if ((err as { code?: string }).code === 'timeout') return new Promise<ProviderUsage>(() => {});
            throw err;
          }
        },
      }),
      { dir: cases(), hangTimeoutMs: 100 },
    );
    assertCaught(r, 'timeout', /did not settle/);
  });

  test('a 5xx reported as a timeout', async () => {
    const r = await checkPlugin(
      acme({
        async fetchUsage(ctx) {
          try {
            return await goodFetch(ctx);
          } catch (err) {
            if (err instanceof UpstreamError && err.upstreamStatus === 500) throw new (await import('../src/index.js')).TimeoutError();
            throw err;
          }
        },
      }),
      { dir: cases() },
    );
    assertCaught(r, 'server_error', /gets HTTP 500, expected upstream_error, got timeout/);
  });
});

describe('descriptor', () => {
  test('a secret credential property without writeOnly, a bad metric spec, two headlines', async () => {
    const r = await checkPlugin(
      acme({
        credentials: { type: 'object', required: ['api_key'], properties: { api_key: { type: 'string' } } },
        metrics: {
          ...acme().metrics,
          Limit: { type: 'gauge', unit: 'USD', direction: 'increasing', headline: true },
          Bad: { type: 'velocity', unit: 'USD', direction: 'up' } as never,
        },
      }),
      { dir: cases() },
    );
    assertCaught(r, 'descriptor', /credentials\.properties\.api_key: a secret string property must be marked writeOnly: true/);
    assertCaught(r, 'descriptor', /descriptor\/metrics\/Bad\/type: must be one of/);
    assertCaught(r, 'descriptor', /descriptor\/metrics\/Bad\/direction: must be one of/);
    assertCaught(r, 'descriptor', /more than one headline metric/);
  });

  test('a bad id and a missing fetchUsage stop before running cases', async () => {
    const plugin = { ...acme(), id: 'Acme_Provider', fetchUsage: undefined } as unknown as ReturnType<typeof acme>;
    const r = await checkPlugin(plugin, { dir: cases() });
    assertCaught(r, 'descriptor', /descriptor\/id: must match/);
    assertCaught(r, 'descriptor', /fetchUsage: must be a function/);
    assert.equal(r.cases.length, 0);
  });
});

describe('robustness', () => {
  test('a default export that is not a plugin is reported, not thrown', async () => {
    for (const bad of [null, {}, { ...acme(), credentials: undefined, settings: 'x' }]) {
      const r = await checkPlugin(bad as unknown as ReturnType<typeof acme>, { dir: cases() });
      assert.equal(r.ok, false);
      assert.ok(r.failures.some((f) => f.check === 'descriptor'), lines(r).join('\n'));
    }
  });

  test('native buckets and rotated credentials are compared when expected.json lists them', async () => {
    const files = acmeCases();
    const expected = files['healthy/expected.json'] as Record<string, unknown>;
    expected.native = [{ metric: 'Used', window_start: '2026-11-19T00:00:00Z', window_end: '2026-11-20T00:00:00Z', value: 1.25, unit: 'USD' }];
    expected.credentials = { api_key: 'rotated-key-000000000000' };
    const r = await checkPlugin(
      acme({
        async fetchUsage(ctx) {
          return {
            ...(await goodFetch(ctx)),
            native: [{ metric: 'Used', window_start: '2026-11-19T00:00:00Z', window_end: '2026-11-20T00:00:00Z', value: 1.5, unit: 'USD' }],
            credentials: { api_key: 'rotated-key-111111111111' },
          };
        },
      }),
      { dir: cases(files) },
    );
    assertCaught(r, 'case', /native buckets differ from expected\.json:\n\s+\[0\] expected .*"value":1\.25.*got .*"value":1\.5/, 'healthy');
    assertCaught(r, 'case', /credentials \(rotated\): expected \{"api_key":"rotated-key-000000000000"\}/, 'healthy');
  });
});

describe('testcases folder', () => {
  test('unmatched requests, unused responses and bad files are reported per case', async () => {
    const files = acmeCases();
    files['healthy/responses/02-extra.json'] = { request: { path: '/never' }, response: { status: 200, body: {} } };
    files['unlimited/responses/01-usage.json'] = {
      request: { method: 'GET', path: '/usage', headers: { authorization: 'Bearer somebody-else-0000' } },
      response: { status: 200, body: {} },
    };
    files['both/credentials.json'] = { api_key: API_KEY };
    files['both/expected.json'] = { status: 'healthy', metrics: [] };
    files['both/expected-error.json'] = { code: 'auth_error' };
    files['typo/credentials.json'] = { api_key: API_KEY };
    files['typo/case.json'] = { descripton: 'typo' };
    files['typo/responses/01.json'] = { request: { path: 'usage', headers: { Authorization: 'x' } }, response: { status: 200 } };
    files['typo/expected-error.json'] = { code: 'nope' };
    files['bad-credentials/credentials.json'] = { api_key: 'short' };
    files['bad-credentials/expected-error.json'] = { code: 'config_error' };
    const r = await checkPlugin(acme(), { dir: cases(files) });
    assertCaught(r, 'case', /02-extra\.json \(GET \/never\) was never requested/, 'healthy');
    assertCaught(r, 'case', /unmatched request \(answered with HTTP 599\) GET \/usage:\n\s+01-usage\.json: header authorization has a different value/, 'unlimited');
    assertCaught(r, 'testcases', /exactly one of expected\.json and expected-error\.json/, 'both');
    assertCaught(r, 'testcases', /case\.json\/descripton: is not an allowed property/, 'typo');
    assertCaught(r, 'testcases', /responses\/01\.json\/request\/path: must match \^\//, 'typo');
    assertCaught(r, 'testcases', /expected-error\.json\/code: must be one of/, 'typo');
    assertCaught(r, 'testcases', /credentials\.json\/api_key: must have at least 8 characters/, 'bad-credentials');
  });

  test('an empty folder', async () => {
    const r = await checkPlugin(acme(), { dir: cases({ 'README.txt': 'nothing here' }) });
    assertCaught(r, 'testcases', /no case folders/);
  });

  test('settings, credentials and responses get {{base_url}}, base_path and the case clock', async () => {
    const files: Files = {
      'multi/case.json': { now: '2027-01-31T23:59:59Z', base_path: '/api/v2' },
      'multi/credentials.json': { api_key: API_KEY },
      'multi/settings.json': { usage_url: '{{base_url}}/elsewhere/usage' },
      'multi/responses/01-usage.json': {
        request: { path: '/elsewhere/usage', query: { at: '2027-01-31T23:59:59.000Z' } },
        response: { status: 200, headers: { 'x-next': '{{base_url}}/next' }, body: { data: { used: 1, limit: null } } },
      },
      'multi/responses/02-next.json': { request: { path: '/next' }, response: { status: 200, body: { data: { used: 2, limit: null } } } },
      'multi/expected.json': {
        status: 'healthy',
        metrics: [
          { label: 'Used', value: 2, unit: 'USD', maximum: null },
          { label: 'Limit', value: null, unit: 'USD', maximum: null },
          { label: 'Resets at', value: null, unit: 'datetime', maximum: null },
        ],
      },
    };
    const plugin = acme({
      settings: { type: 'object', properties: { usage_url: { type: 'string' } } },
      async fetchUsage(ctx) {
        const settings = ctx.settings as { usage_url: string };
        const first = await ctx.http.request(settings.usage_url, { query: { at: ctx.clock.now().toISOString() } });
        assert.equal(first.headers['x-next'], `${ctx.baseUrl}/next`);
        assert.ok(settings.usage_url.startsWith(ctx.baseUrl));
        assert.ok(ctx.baseUrl.endsWith('/api/v2'));
        const body = await ctx.http.getJson<{ data: { used: number } }>(first.headers['x-next']!);
        return toUsage(body.data);
      },
    });
    const r = await checkPlugin(plugin, { dir: cases(files), skip: { auth_401: 'x', auth_403: 'x', rate_limited: 'x', server_error: 'x', timeout: 'x', malformed_json: 'x', missing_fields: 'x' } });
    assert.deepEqual(lines(r), []);
  });
});
