import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { HttpClient, PluginContext } from '@usage-monitor/core';
import plugin, { HOSTS } from '../src/index.js';

/** Records the URL the plugin asks for and answers with a minimal healthy body. */
async function urlFor(baseUrl: string, settings: Record<string, unknown>): Promise<string> {
  let seen = '';
  const http: HttpClient = {
    request: () => Promise.reject(new Error('unused')),
    getJson: async <T>(url: string) => {
      seen = url;
      return { code: 200, success: true, data: { limits: [] } } as T;
    },
  };
  const noop = () => {};
  const ctx = {
    credentials: { api_key: 'zai-test-key-region-0001' },
    settings,
    baseUrl,
    http,
    clock: { now: () => new Date('2026-08-29T10:00:00Z') },
    signal: new AbortController().signal,
    logger: { debug: noop, info: noop, warn: noop, error: noop },
  } as PluginContext<{ api_key: string }, { region?: 'international' | 'china' }>;
  await plugin.fetchUsage(ctx);
  return seen;
}

test('the region setting picks the host; the default is the international one', async () => {
  assert.equal(await urlFor(HOSTS.international, {}), 'https://api.z.ai/api/monitor/usage/quota/limit');
  assert.equal(await urlFor(HOSTS.international, { region: 'international' }), 'https://api.z.ai/api/monitor/usage/quota/limit');
  assert.equal(await urlFor(HOSTS.international, { region: 'china' }), 'https://open.bigmodel.cn/api/monitor/usage/quota/limit');
});

test('a base URL override wins over the region', async () => {
  assert.equal(await urlFor('https://proxy.example.com/zai', { region: 'china' }), 'https://proxy.example.com/zai/api/monitor/usage/quota/limit');
});
