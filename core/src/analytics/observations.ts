/**
 * Observations derived from one successful snapshot (DESIGN.md section 7).
 *
 * Pure functions: no I/O, no clock. The caller passes the snapshot just taken, the previous successful
 * snapshot of the same connection (or null) and the plugin's metric specs, and stores what comes back.
 * A failed collection must not call this at all: it creates no observations.
 *
 * What comes out, in this order:
 * - per metric of `current` (first occurrence of a label wins):
 *   - a `point` when the value is a finite number and the metric is numeric. null is missing, never 0,
 *     so it yields nothing; strings yield nothing; unit `datetime`/`text` (on the metric or its spec)
 *     yields nothing. A metric the specs do not declare still gets a point, with its own unit.
 *   - a `delta` right after it, when the spec type is delta-capable and the rules below allow one.
 * - one `native` observation per provider-native bucket with a finite value.
 *
 * Delta rules, against the same label in `previous` (both values finite numbers, same unit):
 * - `counter`, `percent_used`: d = curr - prev. A drop beyond tolerance is a new window: no delta.
 * - `remaining`, `balance`: d = prev - curr. A rise beyond tolerance is a reset or a top-up: no delta.
 * - `gauge`, `rolling_total`: never.
 * - A new window known from the spec's `reset_metric` also means no delta, even when the numbers would
 *   give a positive one: the reset time in `current` is later than in `previous` by more than
 *   `resetJitterMs` (default 60 s, for resets computed as now + seconds-left), or `current` has no reset
 *   time while the previous one had already passed at `current.checked_at`. An unchanged reset time in
 *   the past (a stale value) is still the same window.
 * - For `remaining` and `percent_used`, a changed capacity (the metric's `maximum`, or the value of the
 *   spec's `capacity_metric`) also means no delta: the numbers are not comparable across it.
 * - A delta within tolerance of 0 is recorded as exactly 0: zero usage in that interval is real data.
 * - No deltas when `previous.checked_at` is not strictly before `current.checked_at`.
 *
 * Tolerance (float noise): two values are "equal" when |a - b| <= absolute + relative * max(|a|, |b|).
 * Default absolute 1e-9, relative 1e-12: well above double rounding noise (~1e-16 relative per operation, so
 * 0.1 + 0.2 vs 0.3 is no movement) and well below one unit of an integer counter up to 1e11 (one token of
 * usage on a 10-billion-token counter still counts).
 * `tolerance: n` (a number) means exactly that absolute epsilon with no relative part;
 * `tolerance: { absolute, relative }` sets both.
 */
import { NUMERIC_UNITS_EXCLUDED, type MetricSpec, type MetricType } from '../contracts/metric-spec.js';
import type { Metric, NativeBucket } from '../domain/metrics.js';

export type ObservationKind = 'point' | 'delta';
export type ObservationSource = 'snapshot' | 'native';

export interface ObservationDraft {
  metric: string;
  value: number;
  unit: string;
  kind: ObservationKind;
  source: ObservationSource;
  /** ISO: the snapshot's checked_at. */
  observed_at: string;
  /** ISO: for deltas the previous snapshot time; for native buckets the bucket start; else null. */
  window_start: string | null;
  /** ISO: for deltas the current snapshot time; for native buckets the bucket end; else null. */
  window_end: string | null;
  /** ISO: the window's reset time, when the spec names a `reset_metric` whose current value is an ISO date. */
  reset_at: string | null;
  model: string | null;
}

export interface SnapshotReading {
  checked_at: string;
  metrics: Metric[];
}

export interface Tolerance {
  absolute: number;
  relative: number;
}

export const DEFAULT_TOLERANCE: Readonly<Tolerance> = Object.freeze({ absolute: 1e-9, relative: 1e-12 });

/** How far a reset time may move between two polls and still be the same window (computed resets jitter). */
export const DEFAULT_RESET_JITTER_MS = 60_000;

export const DELTA_TYPES: ReadonlySet<MetricType> = new Set<MetricType>(['counter', 'percent_used', 'remaining', 'balance']);

export interface DeriveObservationsArgs {
  specs: Record<string, MetricSpec>;
  current: SnapshotReading;
  previous: SnapshotReading | null;
  native?: NativeBucket[];
  tolerance?: number | Partial<Tolerance>;
  resetJitterMs?: number;
}

export function deriveObservations(args: DeriveObservationsArgs): ObservationDraft[] {
  const { specs, current, previous } = args;
  const tol = resolveTolerance(args.tolerance);
  const jitter = args.resetJitterMs ?? DEFAULT_RESET_JITTER_MS;
  const observedAt = toIso(current.checked_at);
  if (observedAt === null) throw new TypeError(`current.checked_at is not a date: ${String(current.checked_at)}`);

  const currByLabel = byLabel(current.metrics);
  const prevByLabel = previous ? byLabel(previous.metrics) : null;
  const prevAt = previous ? toIso(previous.checked_at) : null;
  const deltasAllowed = prevByLabel !== null && prevAt !== null && Date.parse(prevAt) < Date.parse(observedAt);

  const out: ObservationDraft[] = [];
  for (const [label, metric] of currByLabel) {
    const spec = Object.hasOwn(specs, label) ? specs[label] : undefined;
    if (!isFiniteNumber(metric.value)) continue;
    if (NUMERIC_UNITS_EXCLUDED.has(metric.unit) || (spec && NUMERIC_UNITS_EXCLUDED.has(spec.unit))) continue;
    const unit = metric.unit || spec?.unit || '';
    const resetAt = spec?.reset_metric ? resetOf(currByLabel, spec.reset_metric) : null;

    out.push({
      metric: label,
      value: metric.value,
      unit,
      kind: 'point',
      source: 'snapshot',
      observed_at: observedAt,
      window_start: null,
      window_end: null,
      reset_at: resetAt,
      model: null,
    });

    if (!spec || !deltasAllowed || !DELTA_TYPES.has(spec.type)) continue;
    const prev = prevByLabel.get(label);
    if (!prev || !isFiniteNumber(prev.value) || prev.unit !== metric.unit) continue;

    if (spec.reset_metric && newWindowByReset(resetAt, resetOf(prevByLabel, spec.reset_metric), observedAt, jitter)) continue;
    if ((spec.type === 'remaining' || spec.type === 'percent_used') && capacityChanged(spec, metric, prev, currByLabel, prevByLabel, tol)) {
      continue;
    }

    const used = spec.type === 'counter' || spec.type === 'percent_used' ? metric.value - prev.value : prev.value - metric.value;
    let delta: number;
    if (nearlyEqual(metric.value, prev.value, tol)) delta = 0;
    else if (used < 0) continue; // a move against the direction: new window, reset or top-up
    else delta = used;

    out.push({
      metric: label,
      value: delta,
      unit,
      kind: 'delta',
      source: 'snapshot',
      observed_at: observedAt,
      window_start: prevAt,
      window_end: observedAt,
      reset_at: resetAt,
      model: null,
    });
  }

  for (const bucket of args.native ?? []) {
    if (!isFiniteNumber(bucket.value)) continue;
    const start = toIso(bucket.window_start);
    const end = toIso(bucket.window_end);
    if (start === null || end === null || Date.parse(end) < Date.parse(start)) continue;
    out.push({
      metric: bucket.metric,
      value: bucket.value,
      unit: bucket.unit,
      kind: 'point',
      source: 'native',
      observed_at: observedAt,
      window_start: start,
      window_end: end,
      reset_at: null,
      model: bucket.model ?? null,
    });
  }
  return out;
}

/** The key native buckets are upserted by (within one connection): the overlap of two polls updates in place. */
export function upsertKey(o: Pick<ObservationDraft, 'metric' | 'window_start' | 'window_end' | 'model'>): string {
  return `${o.metric}|${o.window_start}|${o.window_end}|${o.model ?? ''}`;
}

export function resolveTolerance(t: number | Partial<Tolerance> | undefined): Tolerance {
  if (t === undefined) return { ...DEFAULT_TOLERANCE };
  if (typeof t === 'number') return { absolute: Math.max(0, t), relative: 0 };
  return {
    absolute: Math.max(0, t.absolute ?? DEFAULT_TOLERANCE.absolute),
    relative: Math.max(0, t.relative ?? DEFAULT_TOLERANCE.relative),
  };
}

export function nearlyEqual(a: number, b: number, tol: Tolerance = DEFAULT_TOLERANCE): boolean {
  return Math.abs(a - b) <= tol.absolute + tol.relative * Math.max(Math.abs(a), Math.abs(b));
}

const ISO_DATE = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/i;

/** An ISO 8601 string normalised to `toISOString()` form, or null when it is not one. */
export function toIso(value: unknown): string | null {
  if (typeof value !== 'string' || !ISO_DATE.test(value.trim())) return null;
  const ms = Date.parse(value.trim());
  return Number.isFinite(ms) ? new Date(ms).toISOString() : null;
}

function isFiniteNumber(v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v);
}

function byLabel(metrics: Metric[]): Map<string, Metric> {
  const map = new Map<string, Metric>();
  for (const m of metrics) if (!map.has(m.label)) map.set(m.label, m);
  return map;
}

function resetOf(metrics: Map<string, Metric>, label: string): string | null {
  return toIso(metrics.get(label)?.value);
}

function newWindowByReset(curr: string | null, prev: string | null, now: string, jitterMs: number): boolean {
  if (prev === null) return false;
  const prevMs = Date.parse(prev);
  if (curr === null) return prevMs <= Date.parse(now); // the old window ended and no new reset is known yet
  return Date.parse(curr) - prevMs > jitterMs;
}

function capacityChanged(
  spec: MetricSpec,
  curr: Metric,
  prev: Metric,
  currAll: Map<string, Metric>,
  prevAll: Map<string, Metric>,
  tol: Tolerance,
): boolean {
  const differs = (a: unknown, b: unknown) =>
    isFiniteNumber(a) && isFiniteNumber(b) ? !nearlyEqual(a, b, tol) : (a ?? null) !== (b ?? null);
  if (differs(curr.maximum, prev.maximum)) return true;
  if (spec.capacity_metric) return differs(currAll.get(spec.capacity_metric)?.value, prevAll.get(spec.capacity_metric)?.value);
  return false;
}
