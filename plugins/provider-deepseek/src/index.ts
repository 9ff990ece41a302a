import { apiKeyCredentials, defineProvider, NO_SETTINGS, parseNumber, SchemaDriftError, type Metric, type MetricSpec } from '@usage-monitor/core';

interface Credentials {
  api_key: string;
}

interface BalanceInfo {
  currency?: unknown;
  total_balance?: unknown;
  granted_balance?: unknown;
  topped_up_balance?: unknown;
}

const CURRENCIES = ['USD', 'CNY'] as const;
type Currency = (typeof CURRENCIES)[number];

const balance = (currency: Currency, what: string, headline = false): MetricSpec => ({
  type: 'balance',
  unit: currency,
  direction: 'decreasing',
  ...(headline ? { headline } : {}),
  description: `${what} in ${currency} (only when the account holds ${currency})`,
});

// One group per currency the account may hold. The USD balance is the headline; an account that
// only holds CNY reports only the CNY metrics, and its summary names the CNY balance.
const metrics = {
  'Balance (USD)': balance('USD', 'Total available balance', true),
  'Granted balance (USD)': balance('USD', 'Granted (promotional) balance'),
  'Topped-up balance (USD)': balance('USD', 'Topped-up (paid) balance'),
  'Balance (CNY)': balance('CNY', 'Total available balance'),
  'Granted balance (CNY)': balance('CNY', 'Granted (promotional) balance'),
  'Topped-up balance (CNY)': balance('CNY', 'Topped-up (paid) balance'),
} satisfies Record<string, MetricSpec>;

export default defineProvider<Credentials>({
  apiVersion: 1,
  id: 'deepseek',
  name: 'DeepSeek',
  description: 'Prepaid balance of a DeepSeek API account, per currency.',
  icon: 'M3 12c3-6 9-8 18-6-2 7-8 11-15 10l-3 3z',
  docsUrl: 'https://api-docs.deepseek.com/api/get-user-balance',
  defaultBaseUrl: 'https://api.deepseek.com',
  auth: { kind: 'api_key' },
  credentials: apiKeyCredentials('A DeepSeek API key (sk-...)'),
  settings: NO_SETTINGS,
  metrics,
  capabilities: { native_history: false },

  async fetchUsage(ctx) {
    const body = await ctx.http.getJson<{ is_available?: unknown; balance_infos?: unknown }>(`${ctx.baseUrl}/user/balance`, {
      headers: { authorization: `Bearer ${ctx.credentials.api_key}` },
    });
    if (!body || typeof body !== 'object' || !Array.isArray(body.balance_infos)) {
      throw new SchemaDriftError('DeepSeek /user/balance response has no balance_infos array');
    }

    const out: Metric[] = [];
    const parts: string[] = [];
    for (const currency of CURRENCIES) {
      const info = (body.balance_infos as BalanceInfo[]).find((b) => b && typeof b === 'object' && b.currency === currency);
      if (!info) continue;
      // DeepSeek sends amounts as decimal strings; numbers are accepted too.
      const granted = parseNumber(info.granted_balance);
      const topped = parseNumber(info.topped_up_balance);
      const total = parseNumber(info.total_balance) ?? (granted !== null && topped !== null ? Math.round((granted + topped) * 1e6) / 1e6 : null);
      out.push(
        { label: `Balance (${currency})`, value: total, unit: currency, maximum: null },
        { label: `Granted balance (${currency})`, value: granted, unit: currency, maximum: null },
        { label: `Topped-up balance (${currency})`, value: topped, unit: currency, maximum: null },
      );
      parts.push(total === null ? `${currency} balance unknown` : `${total.toFixed(2)} ${currency}`);
    }
    const others = (body.balance_infos as BalanceInfo[]).map((b) => b?.currency).filter((c) => !CURRENCIES.includes(c as Currency));
    if (others.length) ctx.logger.warn('DeepSeek reported balances in currencies this plugin does not track', { currencies: others });

    const summary = parts.length ? `${parts.join(', ')} available` : 'No balance reported';
    const unavailable = body.is_available === false;
    return {
      status: unavailable ? 'degraded' : 'healthy',
      summary: unavailable ? `Balance too low for API calls (DeepSeek reports is_available: false): ${summary}` : summary,
      metrics: out,
      raw: { is_available: body.is_available, balance_infos: body.balance_infos.slice(0, 10) },
    };
  },
});
