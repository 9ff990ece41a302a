/** One reading in a snapshot. `value` is null when the provider did not report it: never 0. */
export interface Metric {
  label: string;
  value: number | string | null;
  unit: string;
  maximum: number | null;
}

/** A provider-native history bucket (daily cost, hourly tokens), keyed by its window. */
export interface NativeBucket {
  metric: string;
  window_start: string;
  window_end: string;
  value: number | null;
  unit: string;
  model?: string | null;
}

export const metricSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['label', 'value', 'unit', 'maximum'],
  properties: {
    label: { type: 'string', minLength: 1, maxLength: 120 },
    value: { type: ['number', 'string', 'null'] },
    unit: { type: 'string', maxLength: 40 },
    maximum: { type: ['number', 'null'] },
  },
} as const;

export const nativeBucketSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['metric', 'window_start', 'window_end', 'value', 'unit'],
  properties: {
    metric: { type: 'string', minLength: 1, maxLength: 120 },
    window_start: { type: 'string', format: 'date-time' },
    window_end: { type: 'string', format: 'date-time' },
    value: { type: ['number', 'null'] },
    unit: { type: 'string', maxLength: 40 },
    model: { type: ['string', 'null'], maxLength: 200 },
  },
} as const;

/** What `fetchUsage` must return; validated in the main thread before anything is stored. */
export const providerUsageSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['status', 'summary', 'metrics'],
  properties: {
    status: { enum: ['healthy', 'degraded'] },
    summary: { type: 'string', maxLength: 2000 },
    metrics: { type: 'array', maxItems: 500, items: metricSchema },
    native: { type: 'array', maxItems: 20000, items: nativeBucketSchema },
    raw: {},
    credentials: { type: 'object' },
  },
} as const;
