import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { MetricSpec } from '../../src/contracts/metric-spec.js';
import type { Metric, NativeBucket } from '../../src/domain/metrics.js';
import {
  deriveObservations,
  nearlyEqual,
  resolveTolerance,
  toIso,
  upsertKey,
  type ObservationDraft,
  type SnapshotReading,
} from '../../src/analytics/index.js';

const T0 = '2026-11-20T10:00:00.000Z';
const T1 = '2026-11-20T10:05:00.000Z';

const specs: Record<string, MetricSpec> = {
  'Credits used': { type: 'counter', unit: 'credits', direction: 'increasing' },
  'Credits remaining': { type: 'remaining', unit: 'credits', direction: 'decreasing' },
  Balance: { type: 'balance', unit: 'USD', direction: 'decreasing' },
  'Session used': { type: 'percent_used', unit: 'percent', direction: 'increasing', window: '5h', reset_metric: 'Session resets' },
  'Session resets': { type: 'gauge', unit: 'datetime', direction: 'increasing' },
  'Plan credits': { type: 'gauge', unit: 'credits', direction: 'increasing' },
  'Cost last 30 days': { type: 'rolling_total', unit: 'USD', direction: 'increasing', window: '30d' },
  'Key remaining': { type: 'remaining', unit: 'USD', direction: 'decreasing', capacity_metric: 'Key limit' },
  'Key limit': { type: 'gauge', unit: 'USD', direction: 'increasing' },
  Plan: { type: 'gauge', unit: 'text', direction: 'increasing' },
};

const m = (label: string, value: Metric['value'], unit = specs[label]?.unit ?? 'credits', maximum: number | null = null): Metric => ({
  label,
  value,
  unit,
  maximum,
});
const snap = (checked_at: string, ...metrics: Metric[]): SnapshotReading => ({ checked_at, metrics });
const run = (current: SnapshotReading, previous: SnapshotReading | null, extra: { native?: NativeBucket[]; tolerance?: number } = {}) =>
  deriveObservations({ specs, current, previous, ...extra });
const deltas = (obs: ObservationDraft[]) => obs.filter((o) => o.kind === 'delta');
const points = (obs: ObservationDraft[]) => obs.filter((o) => o.kind === 'point');

test('counter: 100 then 140 credits used gives a point and a delta of 40 over the interval', () => {
  const obs = run(snap(T1, m('Credits used', 140)), snap(T0, m('Credits used', 100)));
  assert.deepEqual(obs, [
    {
      metric: 'Credits used', value: 140, unit: 'credits', kind: 'point', source: 'snapshot',
      observed_at: T1, window_start: null, window_end: null, reset_at: null, model: null,
    },
    {
      metric: 'Credits used', value: 40, unit: 'credits', kind: 'delta', source: 'snapshot',
      observed_at: T1, window_start: T0, window_end: T1, reset_at: null, model: null,
    },
  ]);
});

test('counter: a drop is a new window, never negative usage', () => {
  const obs = run(snap(T1, m('Credits used', 3)), snap(T0, m('Credits used', 100)));
  assert.equal(points(obs).length, 1);
  assert.deepEqual(deltas(obs), []);
});

test('remaining: 40 then 25 gives 15; 5 then 98 is a reset, no delta', () => {
  const used = run(snap(T1, m('Credits remaining', 25)), snap(T0, m('Credits remaining', 40)));
  assert.deepEqual(deltas(used).map((o) => o.value), [15]);
  const reset = run(snap(T1, m('Credits remaining', 98)), snap(T0, m('Credits remaining', 5)));
  assert.deepEqual(deltas(reset), []);
  assert.deepEqual(points(reset).map((o) => o.value), [98]);
});

test('balance: spending gives a delta, a top-up gives none', () => {
  const spent = run(snap(T1, m('Balance', 17.5)), snap(T0, m('Balance', 20)));
  assert.deepEqual(deltas(spent).map((o) => o.value), [2.5]);
  const topUp = run(snap(T1, m('Balance', 70)), snap(T0, m('Balance', 20)));
  assert.deepEqual(deltas(topUp), []);
});

test('percent_used: 30 then 45 gives 15', () => {
  const obs = run(snap(T1, m('Session used', 45)), snap(T0, m('Session used', 30)));
  assert.deepEqual(deltas(obs).map((o) => [o.value, o.unit]), [[15, 'percent']]);
});

test('reset time: carried on the observations; an advanced reset means no delta even if numbers rise', () => {
  const r1 = '2026-11-20T12:00:00Z';
  const r2 = '2026-11-20T17:00:00Z';
  const same = run(
    snap(T1, m('Session used', 45), m('Session resets', r1)),
    snap(T0, m('Session used', 30), m('Session resets', r1)),
  );
  assert.deepEqual(deltas(same).map((o) => o.value), [15]);
  assert.ok(same.filter((o) => o.metric === 'Session used').every((o) => o.reset_at === '2026-11-20T12:00:00.000Z'));
  assert.equal(same.filter((o) => o.metric === 'Session resets').length, 0, 'datetime metrics produce no observations');

  const advanced = run(
    snap(T1, m('Session used', 45), m('Session resets', r2)),
    snap(T0, m('Session used', 30), m('Session resets', r1)),
  );
  assert.deepEqual(deltas(advanced), []);
  assert.equal(points(advanced)[0]?.reset_at, '2026-11-20T17:00:00.000Z');
});

test('reset time: a few seconds of jitter is the same window; a passed reset with none known now is a new window', () => {
  const jitter = run(
    snap(T1, m('Session used', 45), m('Session resets', '2026-11-20T12:00:02Z')),
    snap(T0, m('Session used', 30), m('Session resets', '2026-11-20T12:00:00Z')),
  );
  assert.deepEqual(deltas(jitter).map((o) => o.value), [15]);
  const passed = run(
    snap(T1, m('Session used', 45), m('Session resets', null)),
    snap(T0, m('Session used', 30), m('Session resets', '2026-11-20T10:01:00Z')),
  );
  assert.deepEqual(deltas(passed), []);
  const stale = run(
    snap(T1, m('Session used', 45), m('Session resets', '2026-11-20T09:00:00Z')),
    snap(T0, m('Session used', 30), m('Session resets', '2026-11-20T09:00:00Z')),
  );
  assert.deepEqual(deltas(stale).map((o) => o.value), [15], 'an unchanged (stale) reset is not a new window');
  const unparseable = run(
    snap(T1, m('Session used', 45), m('Session resets', 'soon')),
    snap(T0, m('Session used', 30), m('Session resets', 'soon')),
  );
  assert.deepEqual(points(unparseable).map((o) => o.reset_at), [null]);
  assert.deepEqual(deltas(unparseable).map((o) => o.value), [15]);
});

test('gauge and rolling_total: points only', () => {
  const obs = run(
    snap(T1, m('Plan credits', 600), m('Cost last 30 days', 80, 'USD')),
    snap(T0, m('Plan credits', 500), m('Cost last 30 days', 50, 'USD')),
  );
  assert.deepEqual(obs.map((o) => [o.metric, o.kind, o.value]), [
    ['Plan credits', 'point', 600],
    ['Cost last 30 days', 'point', 80],
  ]);
});

test('null values produce nothing, now or as the previous value', () => {
  assert.deepEqual(run(snap(T1, m('Credits used', null)), snap(T0, m('Credits used', 100))), []);
  const afterGap = run(snap(T1, m('Credits used', 120)), snap(T0, m('Credits used', null)));
  assert.deepEqual(afterGap.map((o) => o.kind), ['point']);
});

test('first snapshot (no previous): points only', () => {
  const obs = run(snap(T1, m('Credits used', 140), m('Balance', 20), m('Session used', 10)), null);
  assert.deepEqual(obs.map((o) => [o.metric, o.kind]), [
    ['Credits used', 'point'],
    ['Balance', 'point'],
    ['Session used', 'point'],
  ]);
});

test('float noise within tolerance is no movement: a recorded 0, not a new window', () => {
  const noiseUp = run(snap(T1, m('Credits used', 0.1 + 0.2)), snap(T0, m('Credits used', 0.3)));
  assert.deepEqual(deltas(noiseUp).map((o) => o.value), [0]);
  const noiseDown = run(snap(T1, m('Credits used', 0.3)), snap(T0, m('Credits used', 0.1 + 0.2)));
  assert.deepEqual(deltas(noiseDown).map((o) => o.value), [0]);
  const relNoise = run(snap(T1, m('Balance', 1_000_000 + 4e-7)), snap(T0, m('Balance', 1_000_000)));
  assert.deepEqual(deltas(relNoise).map((o) => o.value), [0], 'a rise within 1e-12 relative is not a top-up');
  const exact = run(snap(T1, m('Credits used', 0.1 + 0.2)), snap(T0, m('Credits used', 0.3)), { tolerance: 0 });
  assert.deepEqual(deltas(exact).length, 1, 'tolerance 0: the tiny positive difference is kept');
  const exactDown = run(snap(T1, m('Credits used', 0.3)), snap(T0, m('Credits used', 0.1 + 0.2)), { tolerance: 0 });
  assert.deepEqual(deltas(exactDown), [], 'tolerance 0: any drop is a new window');
});

test('a real zero delta is recorded', () => {
  const obs = run(snap(T1, m('Credits used', 100)), snap(T0, m('Credits used', 100)));
  assert.deepEqual(deltas(obs).map((o) => o.value), [0]);
});

test('string values are ignored; text and datetime units produce nothing', () => {
  const obs = run(
    snap(T1, m('Credits used', '140'), m('Plan', 'plus'), m('Other', 7, 'text'), m('When', '2026-11-20T00:00:00Z', 'datetime')),
    snap(T0, m('Credits used', 100)),
  );
  assert.deepEqual(obs, []);
});

test('metrics not in specs: a point with their own unit, never a delta', () => {
  const obs = run(snap(T1, m('Mystery', 9, 'tokens')), snap(T0, m('Mystery', 4, 'tokens')));
  assert.deepEqual(obs.map((o) => [o.metric, o.kind, o.value, o.unit]), [['Mystery', 'point', 9, 'tokens']]);
});

test('no delta across a unit change, a capacity change, or a non-increasing time', () => {
  const unit = run(snap(T1, m('Balance', 10, 'CNY')), snap(T0, m('Balance', 20, 'USD')));
  assert.deepEqual(deltas(unit), []);
  const maxChanged = run(snap(T1, m('Credits remaining', 30, 'credits', 50)), snap(T0, m('Credits remaining', 40, 'credits', 100)));
  assert.deepEqual(deltas(maxChanged), []);
  const capChanged = run(
    snap(T1, m('Key remaining', 30, 'USD'), m('Key limit', 40, 'USD')),
    snap(T0, m('Key remaining', 45, 'USD'), m('Key limit', 50, 'USD')),
  );
  assert.deepEqual(deltas(capChanged), []);
  const capSame = run(
    snap(T1, m('Key remaining', 30, 'USD'), m('Key limit', 50, 'USD')),
    snap(T0, m('Key remaining', 45, 'USD'), m('Key limit', 50, 'USD')),
  );
  assert.deepEqual(deltas(capSame).map((o) => o.value), [15]);
  const backwards = run(snap(T0, m('Credits used', 140)), snap(T1, m('Credits used', 100)));
  assert.deepEqual(deltas(backwards), []);
  const sameTime = run(snap(T0, m('Credits used', 140)), snap(T0, m('Credits used', 100)));
  assert.deepEqual(deltas(sameTime), []);
});

test('duplicate labels: the first occurrence wins', () => {
  const obs = run(snap(T1, m('Credits used', 140), m('Credits used', 999)), snap(T0, m('Credits used', 100)));
  assert.deepEqual(obs.map((o) => o.value), [140, 40]);
});

test('native buckets become native points with their window and model; null values are skipped', () => {
  const native: NativeBucket[] = [
    { metric: 'Daily cost', window_start: '2026-11-19T00:00:00Z', window_end: '2026-11-20T00:00:00Z', value: 1.83, unit: 'USD', model: 'gpt-5-mini' },
    { metric: 'Daily cost', window_start: '2026-11-20T00:00:00Z', window_end: '2026-11-21T00:00:00Z', value: null, unit: 'USD' },
    { metric: 'Daily cost', window_start: '2026-11-18T00:00:00Z', window_end: '2026-11-19T00:00:00Z', value: 0, unit: 'USD' },
  ];
  const obs = run(snap(T1), null, { native });
  assert.deepEqual(obs, [
    {
      metric: 'Daily cost', value: 1.83, unit: 'USD', kind: 'point', source: 'native', observed_at: T1,
      window_start: '2026-11-19T00:00:00.000Z', window_end: '2026-11-20T00:00:00.000Z', reset_at: null, model: 'gpt-5-mini',
    },
    {
      metric: 'Daily cost', value: 0, unit: 'USD', kind: 'point', source: 'native', observed_at: T1,
      window_start: '2026-11-18T00:00:00.000Z', window_end: '2026-11-19T00:00:00.000Z', reset_at: null, model: null,
    },
  ]);
  assert.equal(upsertKey(obs[0]!), 'Daily cost|2026-11-19T00:00:00.000Z|2026-11-20T00:00:00.000Z|gpt-5-mini');
  assert.equal(upsertKey(obs[1]!), 'Daily cost|2026-11-18T00:00:00.000Z|2026-11-19T00:00:00.000Z|');
});

test('native buckets: the same bucket written two ways has the same upsert key', () => {
  const a = run(snap(T0), null, { native: [{ metric: 'c', window_start: '2026-11-19T00:00:00Z', window_end: '2026-11-20T00:00:00+00:00', value: 1, unit: 'USD' }] });
  const b = run(snap(T1), null, { native: [{ metric: 'c', window_start: '2026-11-19T00:00:00.000Z', window_end: '2026-11-20T01:00:00+01:00', value: 2, unit: 'USD' }] });
  assert.equal(upsertKey(a[0]!), upsertKey(b[0]!));
});

test('observed_at is normalised; an unparseable checked_at is a programming error', () => {
  const obs = run(snap('2026-11-20T11:05:00+01:00', m('Credits used', 1)), null);
  assert.equal(obs[0]?.observed_at, T1);
  assert.throws(() => run(snap('yesterday', m('Credits used', 1)), null), TypeError);
});

test('tolerance helpers', () => {
  assert.deepEqual(resolveTolerance(undefined), { absolute: 1e-9, relative: 1e-12 });
  assert.deepEqual(resolveTolerance(0.01), { absolute: 0.01, relative: 0 });
  assert.deepEqual(resolveTolerance({ relative: 0 }), { absolute: 1e-9, relative: 0 });
  assert.ok(nearlyEqual(0.1 + 0.2, 0.3));
  assert.ok(!nearlyEqual(0.3, 0.31));
  assert.ok(!nearlyEqual(99_999_999_998, 99_999_999_999), 'one unit of a large integer counter is movement');
  assert.equal(toIso('2026-11-20'), '2026-11-20T00:00:00.000Z');
  assert.equal(toIso('Fri, 20 Nov 2026 10:00:00 GMT'), null);
  assert.equal(toIso(1787990000), null);
});
