import { AuthError, SchemaDriftError, UpstreamError, apiKeyCredentials, defineProvider, finiteNumber, regionBaseUrl, regionSetting, sanitizeMessage, type Metric, type MetricSpec } from '@usage-monitor/core';

interface Credentials {
  api_key: string;
}
interface Settings {
  region?: 'international' | 'china';
}
interface BalanceResponse {
  code?: unknown;
  scode?: unknown;
  status?: unknown;
  error?: unknown;
  data?: { available_balance?: unknown; voucher_balance?: unknown; cash_balance?: unknown } | null;
}

export const HOSTS = { international: 'https://api.moonshot.ai/v1', china: 'https://api.moonshot.cn/v1' } as const;
const CURRENCIES = ['USD', 'CNY'] as const;
type Currency = (typeof CURRENCIES)[number];
const FIELDS = [
  ['Available balance', 'available_balance', 'What inference can spend: cash plus vouchers; at or below 0 requests are refused'],
  ['Voucher balance', 'voucher_balance', 'Promotional vouchers left'],
  ['Cash balance', 'cash_balance', 'Topped-up cash left; negative when the account is in debt'],
] as const;

// The response carries no currency: it is implied by the host (.ai = USD, .cn = CNY). A metric's unit
// is fixed by its spec, so each balance is declared once per currency and a connection returns one set.
const metrics: Record<string, MetricSpec> = {};
for (const currency of CURRENCIES) {
  for (const [label, , description] of FIELDS) {
    metrics[`${label} (${currency})`] = {
      type: 'balance',
      unit: currency,
      direction: 'decreasing',
      description: `${description}, ${currency === 'USD' ? 'api.moonshot.ai' : 'api.moonshot.cn'} accounts`,
      ...(label === 'Available balance' && currency === 'USD' ? { headline: true } : {}),
    };
  }
}

/** The currency of a connection: the host's TLD when it tells, else the region setting. */
function currencyOf(baseUrl: string, region: Settings['region']): Currency {
  const host = new URL(baseUrl).hostname;
  if (host.endsWith('.cn')) return 'CNY';
  if (host.endsWith('.ai')) return 'USD';
  return region === 'china' ? 'CNY' : 'USD';
}

export default defineProvider<Credentials, Settings>({
  apiVersion: 1,
  id: 'moonshot',
  name: 'Moonshot (Kimi)',
  description: 'Account balance (available, voucher, cash) of the Moonshot / Kimi Open Platform, in USD (.ai) or CNY (.cn).',
  icon: 'M15 4a8 8 0 1 0 5 14A7 7 0 0 1 15 4z',
  docsUrl: 'https://platform.moonshot.ai/docs/api/balance',
  defaultBaseUrl: HOSTS.international,
  auth: { kind: 'api_key' },
  credentials: apiKeyCredentials('A Moonshot API key (sk-...)'),
  settings: {
    type: 'object',
    additionalProperties: false,
    properties: { region: regionSetting(HOSTS, 'international = api.moonshot.ai (USD), china = api.moonshot.cn (CNY); a base URL override wins') },
  },
  metrics,
  capabilities: { native_history: false },

  async fetchUsage(ctx) {
    const region = ctx.settings.region;
    const base = regionBaseUrl(ctx.baseUrl, region, HOSTS);
    const currency = currencyOf(base, region);
    const body = await ctx.http.getJson<BalanceResponse>(`${base}/users/me/balance`, {
      headers: { authorization: `Bearer ${ctx.credentials.api_key}` },
    });
    const code = finiteNumber(body?.code);
    if (body?.status === false || (code !== null && code !== 0)) {
      const detail = sanitizeMessage(JSON.stringify({ ...body, data: undefined }).slice(0, 300), [ctx.credentials.api_key]);
      const text = `Moonshot reported a failure in an HTTP 200: ${detail}`;
      if (/auth|api[ _-]?key|unauthori[sz]ed|invalid_authentication/i.test(detail)) throw new AuthError(text);
      throw new UpstreamError(text, 200);
    }
    const data = body?.data;
    if (!data || typeof data !== 'object' || !['available_balance', 'voucher_balance', 'cash_balance'].some((k) => k in data)) {
      throw new SchemaDriftError('Moonshot balance response has no data.available_balance');
    }
    const [available, voucher, cash] = FIELDS.map(([, field]) => finiteNumber(data[field])) as [number | null, number | null, number | null];
    const out: Metric[] = FIELDS.map(([label], i) => ({ label: `${label} (${currency})`, value: [available, voucher, cash][i] ?? null, unit: currency, maximum: null }));
    const fmt = (v: number | null) => (v === null ? 'unknown' : `${v.toFixed(2)} ${currency}`);
    const blocked = available !== null && available <= 0;
    const summary = `${fmt(available)} available (cash ${fmt(cash)}, vouchers ${fmt(voucher)})`;
    return { status: blocked ? 'degraded' : 'healthy', summary: blocked ? `Balance exhausted: ${summary}` : summary, metrics: out, raw: body };
  },
});
