/** How a metric behaves over time; analytics derive consumption from it (DESIGN.md section 7). */
export const METRIC_TYPES = ['counter', 'remaining', 'balance', 'gauge', 'rolling_total', 'percent_used'] as const;
export type MetricType = (typeof METRIC_TYPES)[number];

export const METRIC_WINDOWS = ['5h', '24h', '7d', '30d', 'billing_period'] as const;
export type MetricWindow = (typeof METRIC_WINDOWS)[number];

/** Whether a value grows (`increasing`) or shrinks (`decreasing`) as usage is consumed. */
export type MetricDirection = 'increasing' | 'decreasing';

export interface MetricSpec {
  type: MetricType;
  /** `USD`, `EUR`, `CNY`, `credits`, `tokens`, `requests`, `characters`, `percent`, `datetime`, `text`, ... */
  unit: string;
  direction: MetricDirection;
  description?: string;
  window?: MetricWindow | null;
  /** The label of the metric that holds this window's reset time (a `datetime` metric). */
  reset_metric?: string | null;
  /** The label of the metric that holds this quota's size. */
  capacity_metric?: string | null;
  /** A fixed capacity, when the quota size is not reported. */
  maximum?: number | null;
  /** The one metric the overview shows for the connection. At most one per plugin. */
  headline?: boolean;
  /** The metric used for quota overlays (0-100 or with a maximum). */
  utilization?: boolean;
  /** Whether alert thresholds may target this metric (default: numeric metrics only). */
  alertable?: boolean;
}

export const NUMERIC_UNITS_EXCLUDED = new Set(['datetime', 'text']);

export function isNumericSpec(spec: MetricSpec): boolean {
  return !NUMERIC_UNITS_EXCLUDED.has(spec.unit);
}

export const metricSpecSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'unit', 'direction'],
  properties: {
    type: { enum: [...METRIC_TYPES] },
    unit: { type: 'string', minLength: 1, maxLength: 40 },
    direction: { enum: ['increasing', 'decreasing'] },
    description: { type: 'string', maxLength: 500 },
    window: { anyOf: [{ enum: [...METRIC_WINDOWS] }, { type: 'null' }] },
    reset_metric: { type: ['string', 'null'] },
    capacity_metric: { type: ['string', 'null'] },
    maximum: { type: ['number', 'null'] },
    headline: { type: 'boolean' },
    utilization: { type: 'boolean' },
    alertable: { type: 'boolean' },
  },
} as const;
