import {
  RateLimitedError,
  NO_SETTINGS,
  SchemaDriftError,
  datetimeSpec,
  defineProvider,
  isRecord,
  parseNumber,
  parseRetryAfter,
  percentUsedSpec,
  sanitizeMessage,
  throwForStatus,
  type Metric,
  type MetricSpec,
} from '@usage-monitor/core';

export type CopilotCredentials = {
  token: string;
};

type Quota = 'premium' | 'chat' | 'completions';

const used = (name: string, extra: Partial<MetricSpec> = {}): MetricSpec =>
  percentUsedSpec('billing_period', 'Quota resets at', `Share of the monthly ${name} quota used (null when unlimited)`, extra);
const remaining = (name: string, capacity: string): MetricSpec => ({
  type: 'remaining',
  unit: 'requests',
  direction: 'decreasing',
  window: 'billing_period',
  reset_metric: 'Quota resets at',
  capacity_metric: capacity,
  description: `${name} left this month (null when unlimited)`,
});
const entitlement = (name: string): MetricSpec => ({
  type: 'gauge',
  unit: 'requests',
  direction: 'increasing',
  description: `The monthly ${name} quota (null when unlimited)`,
});

const metrics = {
  'Premium requests used': used('premium request', { headline: true, utilization: true }),
  'Premium requests remaining': remaining('Premium requests', 'Premium requests quota'),
  'Premium requests quota': entitlement('premium request'),
  'Premium requests overage': {
    type: 'counter',
    unit: 'requests',
    direction: 'increasing',
    window: 'billing_period',
    reset_metric: 'Quota resets at',
    description: 'Premium requests beyond the quota this month (billed when overage is permitted)',
  },
  'Chat used': used('chat'),
  'Chat remaining': remaining('Chat requests', 'Chat quota'),
  'Chat quota': entitlement('chat'),
  'Completions used': used('code completion'),
  'Completions remaining': remaining('Code completions', 'Completions quota'),
  'Completions quota': entitlement('code completion'),
  'Quota resets at': datetimeSpec('When the monthly quotas reset'),
} satisfies Record<string, MetricSpec>;

type Label = keyof typeof metrics;
const specOf = (label: Label): MetricSpec => metrics[label];

const LABELS: Record<Quota, { used: Label; remaining: Label; quota: Label; key: string }> = {
  premium: { used: 'Premium requests used', remaining: 'Premium requests remaining', quota: 'Premium requests quota', key: 'premium_interactions' },
  chat: { used: 'Chat used', remaining: 'Chat remaining', quota: 'Chat quota', key: 'chat' },
  completions: { used: 'Completions used', remaining: 'Completions remaining', quota: 'Completions quota', key: 'completions' },
};

interface Reading {
  used: number | null;
  remaining: number | null;
  quota: number | null;
  overage: number | null;
  unlimited: boolean;
}

const round = (v: number, digits = 2) => Math.round(v * 10 ** digits) / 10 ** digits;
const clampPct = (v: number) => Math.min(100, Math.max(0, round(v)));

function readSnapshot(s: Record<string, unknown>): Reading {
  // Counts arrive as ints, floats or (in some plans) strings; parseNumber reads all three.
  const overage = parseNumber(s.overage_count);
  // Unlimited quotas report entitlement 0 and remaining 0: that is "no cap", not "nothing left".
  if (s.unlimited === true) return { used: null, remaining: null, quota: null, overage, unlimited: true };
  const quota = parseNumber(s.entitlement);
  const left = parseNumber(s.remaining) ?? parseNumber(s.quota_remaining);
  // A zero entitlement with nothing left carries no quota (token-based billing, business seats).
  if (quota === 0 && (left === null || left === 0)) return { used: null, remaining: null, quota: null, overage, unlimited: false };
  const pctRemaining = parseNumber(s.percent_remaining);
  const usedPct =
    pctRemaining !== null ? clampPct(100 - pctRemaining) : quota !== null && quota > 0 && left !== null ? clampPct(100 - (left / quota) * 100) : null;
  return { used: usedPct, remaining: left, quota, overage, unlimited: false };
}

/** Free ("limited") plans may report `monthly_quotas` (size) and `limited_user_quotas` (left) instead. */
function readLimited(body: Record<string, unknown>, key: 'chat' | 'completions'): Reading | null {
  const monthly = isRecord(body.monthly_quotas) ? parseNumber(body.monthly_quotas[key]) : null;
  const left = isRecord(body.limited_user_quotas) ? parseNumber(body.limited_user_quotas[key]) : null;
  if (monthly === null && left === null) return null;
  const usedPct = monthly !== null && monthly > 0 && left !== null ? clampPct(100 - (left / monthly) * 100) : null;
  return { used: usedPct, remaining: left, quota: monthly, overage: null, unlimited: false };
}

/** Prefers the UTC timestamp; a bare `YYYY-MM-DD` is taken as UTC midnight. */
function resetTime(body: Record<string, unknown>): string | null {
  for (const v of [body.quota_reset_date_utc, body.quota_reset_date, body.limited_user_reset_date]) {
    if (typeof v !== 'string' || !v.trim()) continue;
    const s = /^\d{4}-\d{2}-\d{2}$/.test(v.trim()) ? `${v.trim()}T00:00:00Z` : v;
    const t = Date.parse(s);
    if (!Number.isNaN(t)) return new Date(t).toISOString();
  }
  return null;
}

export default defineProvider<CopilotCredentials>({
  apiVersion: 1,
  id: 'github-copilot',
  name: 'GitHub Copilot',
  description: 'Copilot premium request, chat and completion quotas of a GitHub account (undocumented endpoint).',
  icon: 'M12 4c-4.4 0-8 2.7-8 7v4c0 2 3.6 4 8 4s8-2 8-4v-4c0-4.3-3.6-7-8-7zM9 12v2M15 12v2',
  docsUrl: 'https://docs.github.com/en/copilot/concepts/billing/copilot-requests',
  defaultBaseUrl: 'https://api.github.com',
  auth: { kind: 'api_key' },
  credentials: {
    type: 'object',
    additionalProperties: false,
    required: ['token'],
    properties: {
      token: {
        type: 'string',
        minLength: 8,
        maxLength: 500,
        writeOnly: true,
        title: 'GitHub token',
        description: 'A GitHub OAuth token (gho_...) of a Copilot client, or a classic personal access token (ghp_...) with the copilot scope',
      },
    },
  },
  settings: NO_SETTINGS,
  metrics,
  capabilities: { native_history: false },

  async fetchUsage(ctx) {
    const res = await ctx.http.request(`${ctx.baseUrl}/copilot_internal/user`, {
      headers: {
        authorization: `token ${ctx.credentials.token}`,
        accept: 'application/json',
        'x-github-api-version': '2025-04-01',
        // The endpoint serves editor clients; these are the headers Copilot Chat sends.
        'editor-version': 'vscode/1.96.2',
        'editor-plugin-version': 'copilot-chat/0.26.7',
        'user-agent': 'GitHubCopilotChat/0.26.7',
      },
    });
    if (res.status === 429 || (res.status === 403 && res.headers['x-ratelimit-remaining'] === '0')) {
      // GitHub signals its primary rate limit with 403 + x-ratelimit-remaining: 0 and a reset epoch.
      const reset = Number(res.headers['x-ratelimit-reset']);
      const now = ctx.clock.now();
      const retry = parseRetryAfter(res.headers['retry-after'], now) ?? (Number.isFinite(reset) && reset > 0 ? Math.max(0, reset * 1000 - now.getTime()) : null);
      throw new RateLimitedError(`GitHub rate-limited the request (HTTP ${res.status})`, retry);
    }
    throwForStatus(res, (m) => sanitizeMessage(m, [ctx.credentials.token]));
    const body = res.json<unknown>();
    if (!isRecord(body) || !(isRecord(body.quota_snapshots) || isRecord(body.monthly_quotas) || isRecord(body.limited_user_quotas))) {
      throw new SchemaDriftError('The Copilot response has no quota_snapshots');
    }
    const snapshots = isRecord(body.quota_snapshots) ? body.quota_snapshots : {};
    const readings: Partial<Record<Quota, Reading>> = {};
    for (const q of Object.keys(LABELS) as Quota[]) {
      const s = snapshots[LABELS[q].key];
      const r = isRecord(s) ? readSnapshot(s) : q !== 'premium' ? readLimited(body, q) : null;
      if (r) readings[q] = r;
    }

    const values: Partial<Record<Label, number | string | null>> = { 'Premium requests overage': readings.premium?.overage ?? null, 'Quota resets at': resetTime(body) };
    for (const q of Object.keys(LABELS) as Quota[]) {
      const r = readings[q];
      values[LABELS[q].used] = r?.used ?? null;
      values[LABELS[q].remaining] = r?.remaining ?? null;
      values[LABELS[q].quota] = r?.quota ?? null;
    }
    const maximumOf = (label: Label): number | null => {
      const q = (Object.keys(LABELS) as Quota[]).find((k) => LABELS[k].remaining === label);
      return q ? (readings[q]?.quota ?? null) : (specOf(label).maximum ?? null);
    };
    const out: Metric[] = (Object.keys(metrics) as Label[]).map((label) => ({
      label,
      value: values[label] ?? null,
      unit: specOf(label).unit,
      maximum: maximumOf(label),
    }));

    const p = readings.premium;
    const plan = typeof body.copilot_plan === 'string' && body.copilot_plan ? body.copilot_plan : 'Copilot';
    const reset = values['Quota resets at'] as string | null;
    const premiumText = p?.unlimited
      ? 'unlimited premium requests'
      : p && p.quota !== null && p.remaining !== null
        ? `${round(p.remaining)} of ${p.quota} premium requests left`
        : p?.used != null
          ? `${p.used}% of premium requests used`
          : 'premium requests not reported';
    const summary = `${plan}: ${premiumText}${reset ? `, resets ${reset.slice(0, 10)}` : ''}`;
    const exhausted = (['premium', 'chat', 'completions'] as Quota[]).some((q) => {
      const r = readings[q];
      return !!r && !r.unlimited && ((r.quota !== null && r.quota > 0 && r.remaining !== null && r.remaining <= 0) || (r.used ?? 0) >= 100);
    });
    const { analytics_tracking_id: _tracking, ...raw } = body;
    return {
      status: exhausted ? 'degraded' : 'healthy',
      summary: exhausted ? `Quota used up: ${summary}` : summary,
      metrics: out,
      raw,
    };
  },
});
