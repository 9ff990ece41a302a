import { apiKeyCredentials, defineProvider, finiteNumber, NO_SETTINGS, SchemaDriftError, type Metric, type MetricSpec } from '@usage-monitor/core';

interface Credentials {
  api_key: string;
  management_key?: string | null;
}

interface KeyInfo {
  label?: string;
  limit: number | null;
  limit_remaining: number | null;
  limit_reset: string | null;
  usage: number | null;
  usage_daily: number | null;
  usage_weekly: number | null;
  usage_monthly: number | null;
  is_free_tier?: boolean;
  expires_at?: string | null;
}

const USD = 'USD';
const usd = (spec: Omit<MetricSpec, 'unit'>): MetricSpec => ({ unit: USD, ...spec });

const metrics = {
  'Usage this month': usd({ type: 'counter', direction: 'increasing', window: '30d', headline: true, description: 'Spend in the current UTC month' }),
  'Usage this week': usd({ type: 'counter', direction: 'increasing', window: '7d', description: 'Spend in the current UTC week (Monday to Sunday)' }),
  'Usage today': usd({ type: 'counter', direction: 'increasing', window: '24h', description: 'Spend in the current UTC day' }),
  'Usage total': usd({ type: 'counter', direction: 'increasing', description: 'All-time spend of this key' }),
  'Limit remaining': usd({ type: 'remaining', direction: 'decreasing', window: 'billing_period', capacity_metric: 'Limit', description: 'What is left of the key limit (null when the key has no limit)' }),
  Limit: usd({ type: 'gauge', direction: 'increasing', description: 'The key spending limit (null when unlimited)' }),
  'Limit used': { type: 'percent_used', unit: 'percent', direction: 'increasing', window: 'billing_period', utilization: true, description: 'Share of the key limit used' },
  'Credits remaining': usd({ type: 'balance', direction: 'decreasing', description: 'Account credits left (management key only)' }),
  'Credits purchased': usd({ type: 'gauge', direction: 'increasing', description: 'Account credits bought in total (management key only)' }),
} satisfies Record<string, MetricSpec>;

type Label = keyof typeof metrics;

const round = (v: number, digits = 4) => Math.round(v * 10 ** digits) / 10 ** digits;

export default defineProvider<Credentials>({
  apiVersion: 1,
  id: 'openrouter',
  name: 'OpenRouter',
  description: 'Spend and limit of an OpenRouter API key; account credits when a management key is added.',
  icon: 'M4 12h5l3-6 3 12 3-6h2',
  docsUrl: 'https://openrouter.ai/docs/api/api-reference/api-keys/get-current-key',
  defaultBaseUrl: 'https://openrouter.ai/api/v1',
  auth: { kind: 'api_key' },
  credentials: apiKeyCredentials('An OpenRouter API key (sk-or-v1-...)', {
    optionalProperties: {
      management_key: {
        type: ['string', 'null'],
        maxLength: 500,
        writeOnly: true,
        title: 'Management key',
        description: 'Optional: a management key, to also read account credits',
      },
    },
  }),
  settings: NO_SETTINGS,
  metrics,
  capabilities: { native_history: false },

  async fetchUsage(ctx) {
    const body = await ctx.http.getJson<{ data?: KeyInfo }>(`${ctx.baseUrl}/key`, {
      headers: { authorization: `Bearer ${ctx.credentials.api_key}` },
    });
    const key = body?.data;
    if (!key || typeof key !== 'object' || !('usage' in key)) {
      throw new SchemaDriftError('OpenRouter /key response has no data.usage');
    }
    const limit = finiteNumber(key.limit);
    const remaining = finiteNumber(key.limit_remaining);
    const values: Partial<Record<Label, number | null>> = {
      'Usage this month': finiteNumber(key.usage_monthly),
      'Usage this week': finiteNumber(key.usage_weekly),
      'Usage today': finiteNumber(key.usage_daily),
      'Usage total': finiteNumber(key.usage),
      'Limit remaining': remaining,
      Limit: limit,
      'Limit used': limit !== null && limit > 0 && remaining !== null ? round(((limit - remaining) / limit) * 100, 2) : null,
    };

    let credits: { total_credits?: unknown; total_usage?: unknown } | undefined;
    if (ctx.credentials.management_key) {
      const res = await ctx.http.getJson<{ data?: typeof credits }>(`${ctx.baseUrl}/credits`, {
        headers: { authorization: `Bearer ${ctx.credentials.management_key}` },
      });
      credits = res?.data;
      if (!credits || typeof credits !== 'object') throw new SchemaDriftError('OpenRouter /credits response has no data');
      const total = finiteNumber(credits.total_credits);
      const used = finiteNumber(credits.total_usage);
      values['Credits purchased'] = total;
      values['Credits remaining'] = total !== null && used !== null ? round(total - used) : null;
    }

    const out: Metric[] = (Object.keys(metrics) as Label[])
      .filter((label) => label in values)
      .map((label) => ({
        label,
        value: values[label] ?? null,
        unit: metrics[label].unit,
        maximum: label === 'Limit remaining' ? limit : label === 'Limit used' ? 100 : null,
      }));

    const exhausted = limit !== null && remaining !== null && remaining <= 0;
    const month = values['Usage this month'];
    const summary = [
      month !== null && month !== undefined ? `$${month.toFixed(2)} this month` : 'usage unknown',
      limit !== null ? `$${(remaining ?? 0).toFixed(2)} of $${limit.toFixed(2)} limit left` : 'no key limit',
      values['Credits remaining'] != null ? `$${values['Credits remaining'].toFixed(2)} credits` : null,
    ]
      .filter(Boolean)
      .join(', ');

    return {
      status: exhausted ? 'degraded' : 'healthy',
      summary: exhausted ? `Key limit exhausted: ${summary}` : summary,
      metrics: out,
      // `label` is OpenRouter's masked key; it is not needed and is dropped rather than stored.
      raw: { key: { ...key, label: undefined }, ...(credits ? { credits } : {}) },
    };
  },
});
