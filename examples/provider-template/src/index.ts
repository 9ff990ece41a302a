import { apiKeyCredentials, datetimeSpec, defineProvider, finiteNumber, NO_SETTINGS, SchemaDriftError, type MetricSpec } from '@usage-monitor/core';

/**
 * A template provider for a made-up API: `GET {baseUrl}/account/usage` with a bearer key answers
 * `{ "credits_remaining": 740, "credits_limit": 1000, "period_end": "2026-12-01T00:00:00Z" }`,
 * where `credits_limit` and `period_end` may be null. Copy this folder to start a new provider.
 */

interface Credentials {
  api_key: string;
}

interface UsageResponse {
  credits_remaining?: unknown;
  credits_limit?: unknown;
  period_end?: unknown;
}

const metrics = {
  'Credits remaining': {
    type: 'remaining',
    unit: 'credits',
    direction: 'decreasing',
    window: 'billing_period',
    capacity_metric: 'Credit limit',
    reset_metric: 'Period ends',
    headline: true,
    description: 'Credits left in the current billing period',
  },
  'Credit limit': { type: 'gauge', unit: 'credits', direction: 'increasing', description: 'Credits granted per billing period' },
  'Period ends': datetimeSpec('When the credits reset'),
} satisfies Record<string, MetricSpec>;

/** Upstream values become numbers (`finiteNumber`) or ISO strings, or null: a missing value is never 0. */
const isoOrNull = (v: unknown): string | null => (typeof v === 'string' && !Number.isNaN(Date.parse(v)) ? new Date(v).toISOString() : null);

export default defineProvider<Credentials>({
  apiVersion: 1,
  id: 'template',
  name: 'Template',
  description: 'Credits of a made-up API: the starting point for a new provider plugin.',
  docsUrl: 'https://example.com/docs/usage',
  defaultBaseUrl: 'https://api.example.com/v1',
  auth: { kind: 'api_key' },
  // One write-only `api_key` string (8 to 500 characters); pass a description to tell users which key.
  credentials: apiKeyCredentials(),
  settings: NO_SETTINGS,
  metrics,

  async fetchUsage(ctx) {
    // getJson throws the right core error for 401/403, 429, 5xx, timeouts and malformed JSON.
    const body = await ctx.http.getJson<UsageResponse>(`${ctx.baseUrl}/account/usage`, {
      headers: { authorization: `Bearer ${ctx.credentials.api_key}` },
    });
    if (!body || typeof body !== 'object' || !('credits_remaining' in body)) {
      throw new SchemaDriftError('The usage response has no credits_remaining');
    }
    const remaining = finiteNumber(body.credits_remaining);
    const limit = finiteNumber(body.credits_limit);
    const exhausted = remaining !== null && remaining <= 0;
    return {
      status: exhausted ? 'degraded' : 'healthy',
      summary: remaining === null ? 'credits unknown' : `${remaining} credits left${limit !== null ? ` of ${limit}` : ''}`,
      metrics: [
        { label: 'Credits remaining', value: remaining, unit: 'credits', maximum: limit },
        { label: 'Credit limit', value: limit, unit: 'credits', maximum: null },
        { label: 'Period ends', value: isoOrNull(body.period_end), unit: 'datetime', maximum: null },
      ],
      // Stored with the snapshot: only upstream data, never the key.
      raw: body,
    };
  },
});
