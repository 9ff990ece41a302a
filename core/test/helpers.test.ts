import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  AuthError,
  NO_SETTINGS,
  RateLimitedError,
  apiKeyCredentials,
  datetimeSpec,
  finiteNumber,
  isRecord,
  metricSpecSchema,
  nullMetrics,
  parseNumber,
  percentUsedSpec,
  refreshedButFailed,
  regionBaseUrl,
  regionSetting,
  sumOrNull,
} from '../src/index.js';
import { validateSchema } from '../src/testing/index.js';

test('apiKeyCredentials: one required write-only api_key, in the key order plugins spelled out', () => {
  const schema = apiKeyCredentials('A key from the dashboard');
  assert.equal(
    JSON.stringify(schema),
    JSON.stringify({
      type: 'object',
      additionalProperties: false,
      required: ['api_key'],
      properties: { api_key: { type: 'string', minLength: 8, maxLength: 500, writeOnly: true, title: 'API key', description: 'A key from the dashboard' } },
    }),
  );
  assert.deepEqual(validateSchema(schema, { api_key: 'sk-0123456789' }), []);
  assert.notDeepEqual(validateSchema(schema, {}), []);
  assert.notDeepEqual(validateSchema(schema, { api_key: 'short' }), []);
  assert.notDeepEqual(validateSchema(schema, { api_key: 'sk-0123456789', other: 1 }), []);
});

test('apiKeyCredentials: no description key without a description; options set title, limits and optional properties', () => {
  const bare = apiKeyCredentials() as { properties: { api_key: Record<string, unknown> } };
  assert.equal('description' in bare.properties.api_key, false);

  const extra = { type: ['string', 'null'], maxLength: 500, writeOnly: true, title: 'Second key' };
  const schema = apiKeyCredentials('d', { title: 'Admin API key', minLength: 20, maxLength: 100, optionalProperties: { second_key: extra } });
  assert.deepEqual(schema, {
    type: 'object',
    additionalProperties: false,
    required: ['api_key'],
    properties: {
      api_key: { type: 'string', minLength: 20, maxLength: 100, writeOnly: true, title: 'Admin API key', description: 'd' },
      second_key: extra,
    },
  });
  assert.deepEqual(Object.keys((schema as { properties: object }).properties), ['api_key', 'second_key']);
  // Each call builds a new object: one plugin cannot change another's schema.
  assert.notEqual(apiKeyCredentials('x'), apiKeyCredentials('x'));
});

test('NO_SETTINGS: an object schema that allows no properties, frozen', () => {
  assert.deepEqual(NO_SETTINGS, { type: 'object', additionalProperties: false, properties: {} });
  assert.deepEqual(validateSchema(NO_SETTINGS, {}), []);
  assert.notDeepEqual(validateSchema(NO_SETTINGS, { region: 'x' }), []);
  assert.ok(Object.isFrozen(NO_SETTINGS) && Object.isFrozen(NO_SETTINGS.properties));
});

test('percentUsedSpec and datetimeSpec: the specs and key order plugins wrote by hand', () => {
  assert.equal(
    JSON.stringify(percentUsedSpec('5h', 'Session resets at', 'Share used', { utilization: true })),
    JSON.stringify({
      type: 'percent_used',
      unit: 'percent',
      direction: 'increasing',
      window: '5h',
      reset_metric: 'Session resets at',
      maximum: 100,
      description: 'Share used',
      utilization: true,
    }),
  );
  assert.equal(percentUsedSpec('billing_period', null, 'd').reset_metric, null);
  assert.equal(percentUsedSpec('7d', 'r', 'd', { maximum: null }).maximum, null, 'extra overrides');
  assert.equal(
    JSON.stringify(datetimeSpec('When the window resets')),
    JSON.stringify({ type: 'gauge', unit: 'datetime', direction: 'increasing', description: 'When the window resets' }),
  );
  for (const spec of [percentUsedSpec('7d', 'r', 'd', { headline: true }), datetimeSpec('d')]) {
    assert.deepEqual(validateSchema(metricSpecSchema, spec), []);
  }
});

const HOSTS = { international: 'https://api.example.com/v1', china: 'https://api.example.cn/v1' } as const;

test('regionSetting: the regions of the hosts map, the first by default', () => {
  assert.equal(
    JSON.stringify(regionSetting(HOSTS, 'Which host')),
    JSON.stringify({ enum: ['international', 'china'], default: 'international', title: 'Region', description: 'Which host' }),
  );
});

test('regionBaseUrl: the region picks the host while the default URL is in use; an override wins', () => {
  assert.equal(regionBaseUrl(HOSTS.international, undefined, HOSTS), HOSTS.international);
  assert.equal(regionBaseUrl(HOSTS.international, 'international', HOSTS), HOSTS.international);
  assert.equal(regionBaseUrl(HOSTS.international, 'china', HOSTS), HOSTS.china);
  assert.equal(regionBaseUrl('https://proxy.example.org/x', 'china', HOSTS), 'https://proxy.example.org/x');
  assert.equal(regionBaseUrl(HOSTS.china, 'international', HOSTS), HOSTS.china, 'only the default URL is replaced');
  assert.equal(regionBaseUrl(HOSTS.international, 'mars', HOSTS), HOSTS.international);
  assert.equal(regionBaseUrl(HOSTS.international, 'toString', HOSTS), HOSTS.international, 'inherited keys are no regions');
  assert.equal(regionBaseUrl(HOSTS.international, null, HOSTS), HOSTS.international);
});

test('finiteNumber: finite numbers only', () => {
  for (const v of [0, -1.5, 1e21]) assert.equal(finiteNumber(v), v);
  for (const v of [null, undefined, '12', '', NaN, Infinity, -Infinity, {}, [], true]) assert.equal(finiteNumber(v), null, String(v));
});

test('parseNumber: finite numbers and numeric strings; blanks and the rest are null', () => {
  assert.equal(parseNumber(3), 3);
  assert.equal(parseNumber('12.50'), 12.5);
  assert.equal(parseNumber(' 7 '), 7);
  assert.equal(parseNumber('-0.25'), -0.25);
  assert.equal(parseNumber('1e3'), 1000);
  for (const v of [null, undefined, '', '   ', 'abc', '12abc', 'Infinity', NaN, Infinity, {}, [], [5], true]) assert.equal(parseNumber(v), null, String(v));
});

test('sumOrNull: null when any part is null, 0 for an empty list, float noise rounded off', () => {
  assert.equal(sumOrNull([]), 0);
  assert.equal(sumOrNull([1, 2, 3.5]), 6.5);
  assert.equal(sumOrNull([0.1, 0.2]), 0.3);
  assert.equal(sumOrNull([1, null, 2]), null);
});

test('isRecord: non-null objects that are not arrays', () => {
  assert.equal(isRecord({}), true);
  assert.equal(isRecord({ a: 1 }), true);
  for (const v of [null, undefined, [], 'x', 1, true]) assert.equal(isRecord(v), false, String(v));
});

const SPECS = {
  'Weekly used': percentUsedSpec('7d', 'Weekly resets at', 'Share used'),
  'Weekly resets at': datetimeSpec('Reset'),
  Credits: { type: 'balance', unit: 'credits', direction: 'decreasing' },
} as const;

test('nullMetrics: every declared metric in order, value null, unit and fixed maximum from the spec', () => {
  assert.deepEqual(nullMetrics(SPECS), [
    { label: 'Weekly used', value: null, unit: 'percent', maximum: 100 },
    { label: 'Weekly resets at', value: null, unit: 'datetime', maximum: null },
    { label: 'Credits', value: null, unit: 'credits', maximum: null },
  ]);
});

test('refreshedButFailed: a degraded result that hands back the rotated tokens; an AuthError is rethrown', () => {
  const rotated = { access_token: 'new-access-token-0001', refresh_token: 'new-refresh-token-0001', id_token: null };
  const usage = refreshedButFailed(new RateLimitedError('rate-limited with new-access-token-0001', 30_000), rotated, SPECS);
  assert.deepEqual(usage, {
    status: 'degraded',
    summary: 'Token refreshed, but the usage request failed: rate-limited with [REDACTED]',
    metrics: nullMetrics(SPECS),
    raw: { error: 'rate_limited' },
    credentials: rotated,
  });
  assert.equal(usage.credentials, rotated);
  assert.deepEqual(refreshedButFailed(new TypeError('boom'), rotated, SPECS).raw, { error: 'upstream_error' });
  assert.equal(refreshedButFailed('plain failure', rotated, SPECS).summary, 'Token refreshed, but the usage request failed: plain failure');
  const auth = new AuthError('refused');
  assert.throws(() => refreshedButFailed(auth, rotated, SPECS), (e) => e === auth);
});
