import { NO_SETTINGS, SchemaDriftError, apiKeyCredentials, datetimeSpec, defineProvider, finiteNumber, type Metric, type MetricSpec } from '@usage-monitor/core';

interface Credentials {
  api_key: string;
}
/** The fields of GET /v1/user/subscription this plugin reads (provider-apis.md section 11). */
interface Subscription {
  tier?: unknown;
  status?: unknown;
  character_count?: unknown;
  character_limit?: unknown;
  next_character_count_reset_unix?: unknown;
  voice_slots_used?: unknown;
  voice_limit?: unknown;
}

const chars = (spec: Omit<MetricSpec, 'unit'>): MetricSpec => ({ unit: 'characters', ...spec });
const metrics = {
  'Characters used %': { type: 'percent_used', unit: 'percent', direction: 'increasing', window: 'billing_period', reset_metric: 'Characters reset', headline: true, utilization: true, description: 'Share of the character (credit) quota used this period' },
  'Characters used': chars({ type: 'counter', direction: 'increasing', window: 'billing_period', reset_metric: 'Characters reset', capacity_metric: 'Character limit', description: 'Characters (credits) used this period' }),
  'Characters remaining': chars({ type: 'remaining', direction: 'decreasing', window: 'billing_period', reset_metric: 'Characters reset', capacity_metric: 'Character limit', description: 'Characters (credits) left this period' }),
  'Character limit': chars({ type: 'gauge', direction: 'increasing', description: 'Characters (credits) included per period' }),
  'Characters reset': datetimeSpec('When the character count resets'),
  'Voice slots used': { type: 'gauge', unit: 'voices', direction: 'increasing', description: 'Custom voices in use (maximum: the voice limit)' },
} satisfies Record<string, MetricSpec>;
type Label = keyof typeof metrics;

/** Subscription states in which the quota is not usable as paid for. */
const BAD_STATUS = new Set(['past_due', 'unpaid', 'incomplete', 'incomplete_expired', 'canceled']);
const round = (v: number) => Math.round(v * 100) / 100;

export default defineProvider<Credentials>({
  apiVersion: 1,
  id: 'elevenlabs',
  name: 'ElevenLabs',
  description: 'Character (credit) quota of an ElevenLabs subscription: used, remaining, limit and next reset.',
  icon: 'M9 4v16M15 4v16',
  docsUrl: 'https://elevenlabs.io/docs/api-reference/user/subscription/get',
  defaultBaseUrl: 'https://api.elevenlabs.io',
  auth: { kind: 'api_key' },
  credentials: apiKeyCredentials('An ElevenLabs API key; a restricted key needs the user_read permission'),
  settings: NO_SETTINGS,
  metrics,
  capabilities: { native_history: false },

  async fetchUsage(ctx) {
    const sub = await ctx.http.getJson<Subscription>(`${ctx.baseUrl}/v1/user/subscription`, { headers: { 'xi-api-key': ctx.credentials.api_key } });
    if (!sub || typeof sub !== 'object' || !('character_count' in sub || 'character_limit' in sub)) {
      throw new SchemaDriftError('ElevenLabs subscription response has no character_count or character_limit');
    }
    const used = finiteNumber(sub.character_count);
    const limit = finiteNumber(sub.character_limit);
    const reset = finiteNumber(sub.next_character_count_reset_unix);
    const quota = used !== null && limit !== null && limit > 0;
    const values: Record<Label, number | string | null> = {
      // Usage-based billing can run past the limit; the percentage is capped at 100 and the overage shows in the summary.
      'Characters used %': quota ? Math.min(100, round((used / limit) * 100)) : null,
      'Characters used': used,
      'Characters remaining': quota ? Math.max(0, limit - used) : null,
      'Character limit': limit,
      'Characters reset': reset !== null && reset > 0 ? new Date(reset * 1000).toISOString() : null,
      'Voice slots used': finiteNumber(sub.voice_slots_used),
    };
    const maximum: Partial<Record<Label, number | null>> = {
      'Characters used %': 100,
      'Characters used': limit,
      'Characters remaining': limit,
      'Voice slots used': finiteNumber(sub.voice_limit),
    };
    const out: Metric[] = (Object.keys(metrics) as Label[]).map((label) => ({ label, value: values[label], unit: metrics[label].unit, maximum: maximum[label] ?? null }));

    const status = typeof sub.status === 'string' ? sub.status : null;
    const exhausted = quota && used >= limit;
    const summary = [
      typeof sub.tier === 'string' ? `${sub.tier} tier` : null,
      used !== null ? `${used} of ${limit ?? '?'} characters used${quota ? ` (${round((used / limit) * 100)}%)` : ''}` : 'usage unknown',
      values['Characters reset'] ? `resets ${values['Characters reset']}` : null,
      status && status !== 'active' ? `subscription ${status}` : null,
    ].filter(Boolean).join(', ');
    const degraded = exhausted || (status !== null && BAD_STATUS.has(status));
    return { status: degraded ? 'degraded' : 'healthy', summary, metrics: out, raw: sub };
  },
});
