import { AuthError, SchemaDriftError, UpstreamError, apiKeyCredentials, datetimeSpec, defineProvider, parseNumber, regionBaseUrl, regionSetting, sanitizeMessage, type Metric, type MetricSpec } from '@usage-monitor/core';

interface Credentials {
  api_key: string;
}
interface Settings {
  region?: 'international' | 'china';
}
/** One entry of `data.limits` (field names per provider-apis.md section 9). */
interface Limit {
  type?: string;
  unit?: unknown;
  number?: unknown;
  usage?: unknown;
  currentValue?: unknown;
  remaining?: unknown;
  percentage?: unknown;
  nextResetTime?: unknown;
}
interface Envelope {
  code?: unknown;
  msg?: unknown;
  message?: unknown;
  success?: unknown;
  data?: { limits?: unknown; level?: unknown; planName?: unknown } | Limit[] | null;
}

export const HOSTS = { international: 'https://api.z.ai', china: 'https://open.bigmodel.cn' } as const;
/** Zhipu business codes of authentication failures (docs.bigmodel.cn/cn/api/api-code), plus HTTP-like ones. */
const AUTH_CODES = new Set([401, 403, 1000, 1001, 1002, 1003, 1004]);

const calls = (spec: Omit<MetricSpec, 'unit' | 'window' | 'reset_metric'>): MetricSpec => ({ unit: 'requests', window: 'billing_period', reset_metric: 'MCP reset', ...spec });

const metrics = {
  '5-hour tokens used': { type: 'percent_used', unit: 'percent', direction: 'increasing', window: '5h', reset_metric: '5-hour reset', headline: true, utilization: true, description: 'Share of the rolling 5-hour token quota used' },
  '5-hour reset': datetimeSpec('When the 5-hour token window resets'),
  'Weekly tokens used': { type: 'percent_used', unit: 'percent', direction: 'increasing', window: '7d', reset_metric: 'Weekly reset', description: 'Share of the weekly token quota used (null on plans without one)' },
  'Weekly reset': datetimeSpec('When the weekly token window resets'),
  'MCP calls used': calls({ type: 'counter', direction: 'increasing', capacity_metric: 'MCP calls limit', description: 'Web search / web reader tool calls used this period' }),
  'MCP calls remaining': calls({ type: 'remaining', direction: 'decreasing', capacity_metric: 'MCP calls limit', description: 'Tool calls left this period' }),
  'MCP calls limit': { type: 'gauge', unit: 'requests', direction: 'increasing', description: 'Tool calls included per period' },
  'MCP calls used %': { type: 'percent_used', unit: 'percent', direction: 'increasing', window: 'billing_period', reset_metric: 'MCP reset', description: 'Share of the tool-call quota used' },
  'MCP reset': datetimeSpec('When the tool-call quota resets'),
} satisfies Record<string, MetricSpec>;
type Label = keyof typeof metrics;

const iso = (ms: unknown): string | null => {
  const n = parseNumber(ms);
  return n === null || n <= 0 ? null : new Date(n).toISOString();
};

export default defineProvider<Credentials, Settings>({
  apiVersion: 1,
  id: 'zai',
  name: 'z.ai (GLM Coding Plan)',
  description: 'Token quota (5-hour and weekly windows) and MCP tool-call quota of a z.ai / Zhipu BigModel GLM Coding Plan.',
  icon: 'M5 6h14L5 18h14',
  docsUrl: 'https://docs.z.ai/devpack/overview',
  defaultBaseUrl: HOSTS.international,
  auth: { kind: 'api_key' },
  credentials: apiKeyCredentials('A z.ai / BigModel API key of the account with the coding plan'),
  settings: {
    type: 'object',
    additionalProperties: false,
    properties: { region: regionSetting(HOSTS, 'international = api.z.ai, china = open.bigmodel.cn (a base URL override wins)') },
  },
  metrics,
  capabilities: { native_history: false },

  async fetchUsage(ctx) {
    const base = regionBaseUrl(ctx.baseUrl, ctx.settings.region, HOSTS);
    const body = await ctx.http.getJson<Envelope>(`${base}/api/monitor/usage/quota/limit`, {
      headers: { authorization: `Bearer ${ctx.credentials.api_key}` },
    });
    // Errors often arrive as HTTP 200 with success:false (or a non-200 business code).
    const code = parseNumber(body?.code);
    if (body?.success === false || (body?.success === undefined && code !== null && code !== 200 && code !== 0)) {
      const text = sanitizeMessage(String(body.msg ?? body.message ?? 'no message').slice(0, 200), [ctx.credentials.api_key]);
      if ((code !== null && AUTH_CODES.has(code)) || /authenticat|unauthori[sz]ed|api[ _-]?key|token (is )?(invalid|expired)/i.test(text)) {
        throw new AuthError(`z.ai rejected the API key (code ${code ?? 'none'}): ${text}`);
      }
      throw new UpstreamError(`z.ai answered code ${code ?? 'none'}: ${text}`, 200);
    }
    const data = body?.data;
    const limits = Array.isArray(data) ? data : data?.limits;
    if (!Array.isArray(limits)) throw new SchemaDriftError('z.ai quota response has no data.limits array');

    const tokens = limits.filter((l): l is Limit => l?.type === 'TOKENS_LIMIT');
    const weekly = tokens.find((l) => parseNumber(l.unit) === 6); // unit 6 = week (unit codes are undocumented)
    const fiveHour = tokens.find((l) => l !== weekly);
    const mcp = limits.find((l): l is Limit => l?.type === 'TIME_LIMIT');
    const mcpLimit = parseNumber(mcp?.usage);

    const values: Record<Label, number | string | null> = {
      '5-hour tokens used': parseNumber(fiveHour?.percentage),
      '5-hour reset': iso(fiveHour?.nextResetTime),
      'Weekly tokens used': parseNumber(weekly?.percentage),
      'Weekly reset': iso(weekly?.nextResetTime),
      'MCP calls used': parseNumber(mcp?.currentValue),
      'MCP calls remaining': parseNumber(mcp?.remaining),
      'MCP calls limit': mcpLimit,
      'MCP calls used %': parseNumber(mcp?.percentage),
      'MCP reset': iso(mcp?.nextResetTime),
    };
    const maximum = (label: Label): number | null =>
      metrics[label].unit === 'percent' ? 100 : label === 'MCP calls used' || label === 'MCP calls remaining' ? mcpLimit : null;
    const out: Metric[] = (Object.keys(metrics) as Label[]).map((label) => ({ label, value: values[label], unit: metrics[label].unit, maximum: maximum(label) }));

    const pctText = (v: unknown) => (typeof v === 'number' ? `${v}% used` : 'unknown');
    const plan = Array.isArray(data) ? undefined : (data?.planName ?? data?.level);
    const exhausted = [values['5-hour tokens used'], values['Weekly tokens used']].some((v) => typeof v === 'number' && v >= 100);
    const summary = [
      `5h ${pctText(values['5-hour tokens used'])}`,
      weekly ? `weekly ${pctText(values['Weekly tokens used'])}` : null,
      mcp ? `MCP ${values['MCP calls remaining'] ?? '?'} of ${mcpLimit ?? '?'} calls left` : null,
      typeof plan === 'string' && plan ? `plan ${plan}` : null,
    ].filter(Boolean).join(', ');
    return { status: exhausted ? 'degraded' : 'healthy', summary: exhausted ? `Token quota exhausted: ${summary}` : summary, metrics: out, raw: body };
  },
});
