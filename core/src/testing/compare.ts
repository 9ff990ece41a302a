import type { Metric, NativeBucket } from '../domain/metrics.js';

/**
 * Comparisons of results with expected.json that explain themselves: a failing case says which
 * metric differs and how, rather than dumping two objects.
 */

/** Numbers equal within floating-point noise (1e-9 relative); everything else strictly. */
export function sameNumber(a: unknown, b: unknown): boolean {
  if (typeof a === 'number' && typeof b === 'number') {
    return a === b || Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));
  }
  return a === b;
}

/** Deep equality of JSON values, numbers compared with `sameNumber`, `undefined` keys ignored. */
export function sameJson(a: unknown, b: unknown): boolean {
  if (typeof a === 'number' || typeof b === 'number') return sameNumber(a, b);
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => sameJson(x, b[i]));
  }
  if (typeof a === 'object' && a !== null && typeof b === 'object' && b !== null) {
    const ra = a as Record<string, unknown>;
    const rb = b as Record<string, unknown>;
    const keys = new Set([...Object.keys(ra), ...Object.keys(rb)].filter((k) => ra[k] !== undefined || rb[k] !== undefined));
    return [...keys].every((k) => sameJson(ra[k], rb[k]));
  }
  return a === b;
}

/** JSON text of a value for messages, shortened. */
export function show(v: unknown, max = 120): string {
  let s: string;
  try {
    s = v === undefined ? 'undefined' : (JSON.stringify(v) ?? String(v));
  } catch {
    s = String(v);
  }
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/**
 * Explains how `actual` differs from `expected` (labels, order, and per-metric value, unit and
 * maximum), or returns null when they are equal.
 */
export function diffMetrics(expected: readonly Metric[], actual: readonly Metric[]): string | null {
  const lines: string[] = [];
  const byLabel = new Map<string, Metric>();
  for (const m of actual) {
    if (byLabel.has(m.label)) lines.push(`"${m.label}" is returned more than once`);
    else byLabel.set(m.label, m);
  }
  const expectedLabels = new Set(expected.map((m) => m.label));
  for (const e of expected) {
    const a = byLabel.get(e.label);
    if (!a) {
      lines.push(`missing "${e.label}" (expected value ${show(e.value)} ${e.unit})`);
      continue;
    }
    for (const field of ['value', 'unit', 'maximum'] as const) {
      if (!sameNumber(e[field], a[field])) lines.push(`"${e.label}": ${field} expected ${show(e[field])}, got ${show(a[field])}`);
    }
    for (const k of Object.keys(a)) {
      if (!['label', 'value', 'unit', 'maximum'].includes(k)) lines.push(`"${e.label}": unexpected field "${k}"`);
    }
  }
  for (const a of actual) {
    if (!expectedLabels.has(a.label)) lines.push(`unexpected "${a.label}" (value ${show(a.value)} ${a.unit}, maximum ${show(a.maximum)})`);
  }
  if (lines.length === 0) {
    const e = expected.map((m) => m.label);
    const a = actual.map((m) => m.label);
    if (e.join('\u0000') !== a.join('\u0000')) lines.push(`order differs: expected [${e.join(', ')}], got [${a.join(', ')}]`);
  }
  return lines.length === 0 ? null : `metrics differ from expected.json:\n  ${lines.join('\n  ')}`;
}

/** Explains the first differences between two lists of native buckets, or null. */
export function diffNative(expected: readonly NativeBucket[], actual: readonly NativeBucket[]): string | null {
  const lines: string[] = [];
  if (expected.length !== actual.length) lines.push(`expected ${expected.length} buckets, got ${actual.length}`);
  const n = Math.min(expected.length, actual.length);
  for (let i = 0; i < n && lines.length < 6; i++) {
    if (!sameJson(expected[i], actual[i])) lines.push(`[${i}] expected ${show(expected[i], 200)}, got ${show(actual[i], 200)}`);
  }
  return lines.length === 0 ? null : `native buckets differ from expected.json:\n  ${lines.join('\n  ')}`;
}
