import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { HttpClient, PluginContext } from '@usage-monitor/core';
import plugin, { HOSTS } from '../src/index.js';

/** Runs the plugin against a recording client; returns the URL asked for and the metric units. */
async function run(baseUrl: string, settings: Record<string, unknown>): Promise<{ url: string; units: string[] }> {
  let url = '';
  const http: HttpClient = {
    request: () => Promise.reject(new Error('unused')),
    getJson: async <T>(u: string) => {
      url = u;
      return { code: 0, data: { available_balance: 1, voucher_balance: 0, cash_balance: 1 }, scode: '0x0', status: true } as T;
    },
  };
  const noop = () => {};
  const ctx = {
    credentials: { api_key: 'sk-moonshot-region-test-0001' },
    settings,
    baseUrl,
    http,
    clock: { now: () => new Date('2026-08-29T10:00:00Z') },
    signal: new AbortController().signal,
    logger: { debug: noop, info: noop, warn: noop, error: noop },
  } as PluginContext<{ api_key: string }, { region?: 'international' | 'china' }>;
  const usage = await plugin.fetchUsage(ctx);
  return { url, units: [...new Set(usage.metrics.map((m) => m.unit))] };
}

test('region picks the host and the currency; the default is api.moonshot.ai in USD', async () => {
  assert.deepEqual(await run(HOSTS.international, {}), { url: 'https://api.moonshot.ai/v1/users/me/balance', units: ['USD'] });
  assert.deepEqual(await run(HOSTS.international, { region: 'china' }), { url: 'https://api.moonshot.cn/v1/users/me/balance', units: ['CNY'] });
});

test('a base URL override wins; its host TLD decides the currency when it tells', async () => {
  assert.deepEqual(await run('https://api.moonshot.cn/v1', {}), { url: 'https://api.moonshot.cn/v1/users/me/balance', units: ['CNY'] });
  assert.deepEqual(await run('https://proxy.example.com/kimi', { region: 'china' }), { url: 'https://proxy.example.com/kimi/users/me/balance', units: ['CNY'] });
  assert.deepEqual(await run('https://proxy.example.com/kimi', {}), { url: 'https://proxy.example.com/kimi/users/me/balance', units: ['USD'] });
});
