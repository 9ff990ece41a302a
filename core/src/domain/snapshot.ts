import type { ErrorCode } from '../errors.js';
import type { Metric } from './metrics.js';

export type SnapshotStatus = 'healthy' | 'degraded' | 'error';

/** A stored poll result (API.md "Snapshot", compat). */
export interface UsageSnapshot {
  id: number;
  provider_config_id: number;
  provider: string;
  status: SnapshotStatus;
  summary: string;
  metrics: Metric[];
  raw: unknown;
  error: string | null;
  error_code: ErrorCode | null;
  checked_at: string;
  duration_ms: number | null;
}

export type HealthStatus = 'healthy' | 'stale' | 'error' | 'never_connected';

export interface Health {
  status: HealthStatus;
  last_attempt_at: string | null;
  last_success_at: string | null;
  last_failure_at: string | null;
  consecutive_failures: number;
  latest_error: string | null;
  age_seconds: number | null;
  is_stale: boolean;
}

export const metricListSchema = {
  type: 'array',
  items: {
    type: 'object',
    required: ['label', 'value', 'unit', 'maximum'],
    properties: {
      label: { type: 'string' },
      value: { type: ['number', 'string', 'null'] },
      unit: { type: 'string' },
      maximum: { type: ['number', 'null'] },
    },
  },
} as const;

export const snapshotSchema = {
  type: 'object',
  required: ['id', 'provider_config_id', 'provider', 'status', 'summary', 'metrics', 'raw', 'error', 'checked_at'],
  properties: {
    id: { type: 'integer' },
    provider_config_id: { type: 'integer' },
    provider: { type: 'string' },
    status: { enum: ['healthy', 'degraded', 'error'] },
    summary: { type: 'string' },
    metrics: metricListSchema,
    raw: {},
    error: { type: ['string', 'null'] },
    error_code: { type: ['string', 'null'] },
    checked_at: { type: 'string', format: 'date-time' },
    duration_ms: { type: ['integer', 'null'] },
  },
} as const;
