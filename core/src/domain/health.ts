import type { Health } from './snapshot.js';

export interface HealthInput {
  lastAttemptAt: Date | null;
  lastSuccessAt: Date | null;
  lastFailureAt: Date | null;
  consecutiveFailures: number;
  /** Whether the newest attempt failed. */
  latestFailed: boolean;
  latestError: string | null;
  /** The polling interval: a last success older than twice this is no longer served as current. */
  intervalMs: number;
  now: Date;
}

/**
 * Health of a connection (API.md): `never_connected` before any attempt; `healthy` when the newest
 * attempt succeeded; `stale` when it failed but the last success is younger than twice the poll
 * interval (the last-known-good snapshot is served); otherwise `error`.
 */
export function computeHealth(h: HealthInput): Health {
  const age = h.lastSuccessAt ? Math.max(0, Math.round((h.now.getTime() - h.lastSuccessAt.getTime()) / 1000)) : null;
  const base = {
    last_attempt_at: h.lastAttemptAt?.toISOString() ?? null,
    last_success_at: h.lastSuccessAt?.toISOString() ?? null,
    last_failure_at: h.lastFailureAt?.toISOString() ?? null,
    consecutive_failures: h.consecutiveFailures,
    age_seconds: age,
  };
  if (!h.lastAttemptAt) return { status: 'never_connected', ...base, latest_error: null, is_stale: false };
  if (!h.latestFailed) return { status: 'healthy', ...base, latest_error: null, is_stale: false };
  const fresh = h.lastSuccessAt !== null && h.now.getTime() - h.lastSuccessAt.getTime() < 2 * h.intervalMs;
  return { status: fresh ? 'stale' : 'error', ...base, latest_error: h.latestError, is_stale: fresh };
}
