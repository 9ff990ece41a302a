/**
 * The dynamic-metrics half of conformance: every case's result is checked against the specs
 * metricsFor(settings) derives for that connection, with the kit's own checkMetricSpecs and the
 * descriptor semantics (one headline, reset_metric pointing at a datetime metric).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkProviderSemantics, ConfigError } from '@usage-monitor/core';
import { checkMetricSpecs, checkPlugin, GENERIC_CHECKS, loadTestCases } from '@usage-monitor/core/testing';
import plugin, { metricsFor, type Settings } from '../src/index.js';

const dir = new URL('../testcases/', import.meta.url);

test('every result matches the specs metricsFor(settings) gives its connection', async () => {
  const skip = Object.fromEntries(GENERIC_CHECKS.map((c) => [c, 'covered by conformance.test.ts']));
  const report = await checkPlugin(plugin, { dir, skip });
  const settingsOf = new Map(loadTestCases(dir).cases.map((c) => [c.name, c.settings as unknown as Settings]));
  let checked = 0;
  for (const c of report.cases) {
    if (!c.result) continue;
    const specs = metricsFor(settingsOf.get(c.name)!);
    assert.deepEqual(checkProviderSemantics({ metrics: specs, fetchUsage: () => {} }), [], c.name);
    assert.deepEqual(checkMetricSpecs(specs, c.result), [], c.name);
    assert.deepEqual(c.result.metrics.map((m) => m.label), Object.keys(specs), `${c.name}: every configured metric is returned, in order`);
    checked++;
  }
  assert.ok(checked >= 4, `only ${checked} cases returned a result`);
});

test('metricsFor derives types, directions, headline and references', () => {
  const specs = metricsFor({
    url: 'https://example.com/usage',
    metrics: [
      { label: 'Reset', path: 'reset', unit: 'datetime' },
      { label: 'Left', path: 'left', unit: 'credits', type: 'remaining', window: '30d', reset_metric: 'Reset' },
      { label: 'Used', path: 'used', unit: 'percent', type: 'percent_used', utilization: true },
    ],
  });
  assert.deepEqual(specs, {
    Reset: { type: 'gauge', unit: 'datetime', direction: 'increasing', description: 'Read from reset' },
    Left: { type: 'remaining', unit: 'credits', direction: 'decreasing', description: 'Read from left', window: '30d', reset_metric: 'Reset', headline: true },
    Used: { type: 'percent_used', unit: 'percent', direction: 'increasing', description: 'Read from used', utilization: true },
  });
  const flagged = metricsFor({ url: 'https://example.com', metrics: [{ label: 'A', path: 'a', unit: 'x' }, { label: 'B', path: 'b', unit: 'x', headline: true }] });
  assert.deepEqual([flagged.A?.headline, flagged.B?.headline], [undefined, true]);
});

test('metricsFor refuses inconsistent lists with ConfigError', () => {
  const bad: Array<Settings['metrics']> = [
    [],
    [{ label: 'A', path: 'a', unit: 'x' }, { label: 'A', path: 'b', unit: 'x' }],
    [{ label: 'P', path: 'p', unit: 'credits', type: 'percent_used' }],
    [{ label: 'L', path: 'l', unit: 'x', reset_metric: 'Nope' }],
  ];
  for (const metrics of bad) assert.throws(() => metricsFor({ url: 'https://example.com', metrics }), ConfigError);
});
