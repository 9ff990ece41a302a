import type { MetricDirection } from '../contracts/metric-spec.js';

export type AlertState = 'normal' | 'warning' | 'critical' | 'exhausted';

/** An alert rule on one metric (API.md). `increasing`: alert when the value rises to a level. */
export interface ThresholdRule {
  metric: string;
  direction: MetricDirection;
  warning?: number | null;
  critical?: number | null;
  exhausted?: number | null;
}

export const thresholdRuleSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['metric', 'direction'],
  anyOf: [{ required: ['warning'] }, { required: ['critical'] }, { required: ['exhausted'] }],
  properties: {
    metric: { type: 'string', minLength: 1, maxLength: 120 },
    direction: { enum: ['increasing', 'decreasing'] },
    warning: { type: ['number', 'null'] },
    critical: { type: ['number', 'null'] },
    exhausted: { type: ['number', 'null'] },
  },
} as const;

export const thresholdListSchema = { type: 'array', maxItems: 100, items: thresholdRuleSchema } as const;

const SEVERITY: AlertState[] = ['normal', 'warning', 'critical', 'exhausted'];

/** The state of one value against one rule; a null value is `normal` (unknown is not an alert). */
export function evaluateThreshold(rule: ThresholdRule, value: number | null): AlertState {
  if (value === null || !Number.isFinite(value)) return 'normal';
  const reached = (level: number | null | undefined) =>
    level !== null && level !== undefined && (rule.direction === 'increasing' ? value >= level : value <= level);
  if (reached(rule.exhausted)) return 'exhausted';
  if (reached(rule.critical)) return 'critical';
  if (reached(rule.warning)) return 'warning';
  return 'normal';
}

export function mostSevere(states: AlertState[]): AlertState {
  return states.reduce<AlertState>((a, b) => (SEVERITY.indexOf(b) > SEVERITY.indexOf(a) ? b : a), 'normal');
}
