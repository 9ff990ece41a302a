import { apiKeyCredentials, datetimeSpec, defineProvider, NO_SETTINGS, parseNumber, SchemaDriftError, UpstreamError, type Metric, type MetricSpec, type NativeBucket } from '@usage-monitor/core';

interface Credentials {
  api_key: string;
}

interface CreditUsage {
  remainingCredits?: unknown;
  planCredits?: unknown;
  billingPeriodStart?: unknown;
  billingPeriodEnd?: unknown;
}

interface Period {
  startDate?: unknown;
  endDate?: unknown;
  creditsUsed?: unknown;
  totalCredits?: unknown;
}

const metrics = {
  'Credits remaining': { type: 'remaining', unit: 'credits', direction: 'decreasing', window: 'billing_period', capacity_metric: 'Plan credits', reset_metric: 'Billing period ends', headline: true, description: 'Credits left for the team, coupons and credit packs included' },
  'Plan credits': { type: 'gauge', unit: 'credits', direction: 'increasing', description: 'Credits the plan grants per billing period (without coupons, packs or auto-recharge)' },
  'Plan used': { type: 'percent_used', unit: 'percent', direction: 'increasing', window: 'billing_period', reset_metric: 'Billing period ends', utilization: true, description: 'Share of the plan credits used (0 when extra credits exceed the plan)' },
  'Credits used this period': { type: 'counter', unit: 'credits', direction: 'increasing', window: 'billing_period', reset_metric: 'Billing period ends', description: 'Credits used in the current billing period (historical endpoint)' },
  'Billing period starts': datetimeSpec('Start of the current billing period'),
  'Billing period ends': datetimeSpec('End of the current billing period, when credits reset'),
} satisfies Record<string, MetricSpec>;

type Label = keyof typeof metrics;

const date = (v: unknown): string | null => (typeof v === 'string' && Number.isFinite(Date.parse(v)) ? new Date(v).toISOString() : null);
/** The v2 docs name the per-period figure `totalCredits`; the current server sends `creditsUsed`. */
const used = (p: Period) => parseNumber(p.creditsUsed) ?? parseNumber(p.totalCredits);

export default defineProvider<Credentials>({
  apiVersion: 1,
  id: 'firecrawl',
  name: 'Firecrawl',
  description: 'Remaining team credits and credits used per billing period of a Firecrawl team.',
  icon: 'M12 3c1 4 5 6 5 11a5 5 0 0 1-10 0c0-3 2-4 2-7 2 1 3 3 3 5',
  docsUrl: 'https://docs.firecrawl.dev/api-reference/endpoint/credit-usage',
  defaultBaseUrl: 'https://api.firecrawl.dev/v2',
  auth: { kind: 'api_key' },
  credentials: apiKeyCredentials('A Firecrawl API key (fc-...)'),
  settings: NO_SETTINGS,
  metrics,
  capabilities: { native_history: true },

  async fetchUsage(ctx) {
    const headers = { authorization: `Bearer ${ctx.credentials.api_key}` };
    const body = await ctx.http.getJson<{ data?: CreditUsage }>(`${ctx.baseUrl}/team/credit-usage`, { headers });
    const data = body?.data;
    if (!data || typeof data !== 'object' || !('remainingCredits' in data)) {
      throw new SchemaDriftError('Firecrawl /team/credit-usage response has no data.remainingCredits');
    }

    // Older servers have no historical endpoint (404): the per-period figures are then unknown.
    let periods: Period[] | null = null;
    try {
      const hist = await ctx.http.getJson<{ periods?: unknown }>(`${ctx.baseUrl}/team/credit-usage/historical`, { headers });
      if (!hist || !Array.isArray(hist.periods)) throw new SchemaDriftError('Firecrawl /team/credit-usage/historical response has no periods array');
      periods = hist.periods as Period[];
    } catch (err) {
      if (!(err instanceof UpstreamError && err.upstreamStatus === 404)) throw err;
    }

    const remaining = parseNumber(data.remainingCredits);
    const plan = parseNumber(data.planCredits);
    const start = date(data.billingPeriodStart);
    const end = date(data.billingPeriodEnd);
    const now = ctx.clock.now().getTime();
    const current =
      periods?.find((p) => {
        const s = Date.parse(String(p.startDate));
        const e = p.endDate == null ? Infinity : Date.parse(String(p.endDate));
        return s <= now && now < e;
      }) ?? null;

    const values: Record<Label, number | string | null> = {
      'Credits remaining': remaining,
      'Plan credits': plan,
      'Plan used': plan !== null && plan > 0 && remaining !== null ? Math.round(Math.min(100, Math.max(0, ((plan - remaining) / plan) * 100)) * 100) / 100 : null,
      'Credits used this period': current ? used(current) : null,
      'Billing period starts': start,
      'Billing period ends': end,
    };
    const maximum: Partial<Record<Label, number | null>> = { 'Credits remaining': plan, 'Plan used': 100 };
    const out: Metric[] = (Object.keys(metrics) as Label[]).map((label) => ({ label, value: values[label], unit: metrics[label].unit, maximum: maximum[label] ?? null }));

    // Closed periods, and the open one when the billing period end is known, become native buckets.
    const native: NativeBucket[] = (periods ?? []).flatMap((p) => {
      const s = date(p.startDate);
      const e = date(p.endDate) ?? (p.endDate == null && p === current ? end : null);
      return s && e ? [{ metric: 'Credits used', window_start: s, window_end: e, value: used(p), unit: 'credits' }] : [];
    });

    const exhausted = remaining !== null && remaining <= 0;
    const left = remaining !== null ? `${remaining.toLocaleString('en-US')} credits left` : 'remaining credits unknown';
    const summary = [plan !== null ? `${left} of ${plan.toLocaleString('en-US')} plan credits` : left, end ? `resets ${end.slice(0, 10)}` : null]
      .filter(Boolean)
      .join(', ');
    return {
      status: exhausted ? 'degraded' : 'healthy',
      summary: exhausted ? `Credits exhausted: ${summary}` : summary,
      metrics: out,
      native,
      raw: {
        credit_usage: { remainingCredits: data.remainingCredits, planCredits: data.planCredits, billingPeriodStart: data.billingPeriodStart, billingPeriodEnd: data.billingPeriodEnd },
        periods: periods?.slice(-24).map((p) => ({ startDate: p.startDate, endDate: p.endDate, credits: used(p) })) ?? null,
      },
    };
  },
});
