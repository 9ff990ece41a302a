import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkProviderSemantics, specsFor, type MetricSpec } from '../src/index.js';

const placeholder: Record<string, MetricSpec> = { Value: { type: 'gauge', unit: 'value', direction: 'increasing' } };
const fetchUsage = async () => ({ status: 'healthy' as const, summary: '', metrics: [] });

test('specsFor: metricsFor(settings) when the plugin has it, else the declared metrics', () => {
  const dynamic = {
    metrics: placeholder,
    metricsFor: (s: { labels: string[] }) => Object.fromEntries(s.labels.map((l) => [l, { type: 'gauge', unit: 'USD', direction: 'increasing' } as MetricSpec])),
  };
  assert.deepEqual(Object.keys(specsFor(dynamic, { labels: ['Spend', 'Budget'] })), ['Spend', 'Budget']);
  assert.equal(specsFor({ metrics: placeholder }, { labels: ['ignored'] }), placeholder);
});

test('checkProviderSemantics: dynamic_metrics and metricsFor go together', () => {
  const base = { metrics: placeholder, fetchUsage };
  assert.deepEqual(checkProviderSemantics({ ...base, capabilities: { dynamic_metrics: true }, metricsFor: () => placeholder }), []);
  assert.deepEqual(checkProviderSemantics({ ...base, capabilities: { dynamic_metrics: true } }), ['metricsFor: must be a function when capabilities.dynamic_metrics is set']);
  assert.deepEqual(checkProviderSemantics({ ...base, capabilities: { dynamic_metrics: true }, metricsFor: 'nope' }), ['metricsFor: must be a function when capabilities.dynamic_metrics is set']);
  assert.deepEqual(checkProviderSemantics({ ...base, metricsFor: () => placeholder }), ['capabilities.dynamic_metrics: must be true when the plugin implements metricsFor']);
  assert.deepEqual(checkProviderSemantics(base), []);
});
