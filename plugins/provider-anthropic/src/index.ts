import {
  apiKeyCredentials,
  ConfigError,
  datetimeSpec,
  defineProvider,
  parseNumber,
  SchemaDriftError,
  sumOrNull,
  UpstreamError,
  type Metric,
  type MetricSpec,
  type NativeBucket,
  type PluginContext,
} from '@usage-monitor/core';

interface Credentials {
  api_key: string;
}

interface Settings {
  window_days?: number;
  bucket_width?: '1h' | '1d';
}

type Row = Record<string, unknown>;
interface Bucket {
  start: number;
  end: number;
  results: Row[];
}
type Ctx = PluginContext<Credentials, Settings>;

const DAY_MS = 86_400_000;
const MAX_PAGES = 20;
const DEFAULT_WINDOW_DAYS = 30;
const ANTHROPIC_VERSION = '2023-06-01';

const tokens = (description: string): MetricSpec => ({ type: 'rolling_total', unit: 'tokens', direction: 'increasing', description });
const metrics = {
  'Cost this month': { type: 'counter', unit: 'USD', direction: 'increasing', window: 'billing_period', reset_metric: 'Month ends', headline: true, description: 'Organization cost since the start of the current UTC month (cost report)' },
  'Cost today': { type: 'counter', unit: 'USD', direction: 'increasing', window: '24h', description: 'Organization cost in the current UTC day' },
  'Cost in window': { type: 'rolling_total', unit: 'USD', direction: 'increasing', description: 'Organization cost over the last `window_days` UTC days (30 by default), today included' },
  'Uncached input tokens in window': tokens('Input tokens neither read from nor written to the prompt cache, over the window'),
  'Cache write tokens in window': tokens('Input tokens written to the prompt cache (5-minute and 1-hour), over the window'),
  'Cache read tokens in window': tokens('Input tokens read from the prompt cache, over the window'),
  'Output tokens in window': tokens('Output tokens over the window'),
  'Web searches in window': { type: 'rolling_total', unit: 'requests', direction: 'increasing', description: 'Server-side web search requests over the window' },
  'Month ends': datetimeSpec('Start of the next UTC month, when the month-to-date cost starts over'),
} satisfies Record<string, MetricSpec>;

type Label = keyof typeof metrics;

const rfc3339 = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');
const at = (o: unknown, key: string) => (o && typeof o === 'object' ? (o as Row)[key] : undefined);

/** Fetches every page of an Admin report (`has_more`/`next_page` -> `page`). */
async function fetchAllPages(ctx: Ctx, path: string, query: Record<string, string | number>) {
  const buckets: Bucket[] = [];
  let page: string | undefined;
  for (let pages = 1; ; pages++) {
    const body = await ctx.http.getJson<{ data?: unknown; has_more?: unknown; next_page?: unknown }>(`${ctx.baseUrl}${path}`, {
      headers: { 'x-api-key': ctx.credentials.api_key, 'anthropic-version': ANTHROPIC_VERSION },
      query: { ...query, page },
    });
    if (!body || !Array.isArray(body.data)) throw new SchemaDriftError(`Anthropic ${path} response has no data array`);
    for (const b of body.data as unknown[]) {
      const start = Date.parse(String(at(b, 'starting_at')));
      const end = Date.parse(String(at(b, 'ending_at')));
      const results = at(b, 'results');
      if (!Number.isFinite(start) || !Number.isFinite(end) || !Array.isArray(results)) {
        throw new SchemaDriftError(`Anthropic ${path} bucket lacks starting_at, ending_at or results`);
      }
      buckets.push({ start, end, results });
    }
    if (body.has_more !== true || typeof body.next_page !== 'string' || body.next_page === '') return { buckets, pages };
    if (pages >= MAX_PAGES) throw new UpstreamError(`Anthropic ${path} still had more pages after ${MAX_PAGES}`);
    page = body.next_page;
  }
}

/** Cost rows carry decimal strings in cents. */
const costOf = (r: Row): number | null => {
  if (typeof r.currency === 'string' && r.currency.toUpperCase() !== 'USD') return null;
  const cents = parseNumber(r.amount);
  return cents === null ? null : cents / 100;
};
const pick: Record<string, (r: Row) => number | null> = {
  'Uncached input tokens': (r) => parseNumber(r.uncached_input_tokens),
  'Cache write tokens': (r) => sumOrNull([parseNumber(at(r.cache_creation, 'ephemeral_5m_input_tokens')), parseNumber(at(r.cache_creation, 'ephemeral_1h_input_tokens'))]),
  'Cache read tokens': (r) => parseNumber(r.cache_read_input_tokens),
  'Output tokens': (r) => parseNumber(r.output_tokens),
  'Web searches': (r) => parseNumber(at(r.server_tool_use, 'web_search_requests')),
};

export default defineProvider<Credentials, Settings>({
  apiVersion: 1,
  id: 'anthropic',
  name: 'Anthropic',
  description: 'Organization cost and token usage of an Anthropic (Claude API) organization, from the Admin usage and cost reports.',
  icon: 'M7 20l5-16 5 16M9.5 13h5',
  docsUrl: 'https://docs.anthropic.com/en/api/usage-cost-api',
  defaultBaseUrl: 'https://api.anthropic.com',
  auth: { kind: 'api_key' },
  credentials: apiKeyCredentials('An Anthropic Admin key (sk-ant-admin...); normal API keys cannot read the reports', { title: 'Admin API key' }),
  settings: {
    type: 'object',
    additionalProperties: false,
    properties: {
      window_days: { type: 'integer', minimum: 1, maximum: 90, default: DEFAULT_WINDOW_DAYS, title: 'Window (days)', description: 'How many UTC days (today included) the window metrics and history cover' },
      bucket_width: { enum: ['1h', '1d'], default: '1d', title: 'Token history granularity', description: 'Hourly or daily token history buckets (cost history is always daily)' },
    },
  },
  metrics,
  capabilities: { native_history: true },

  async fetchUsage(ctx) {
    const days = ctx.settings.window_days ?? DEFAULT_WINDOW_DAYS;
    if (!Number.isInteger(days) || days < 1 || days > 90) throw new ConfigError('window_days must be an integer from 1 to 90', 'window_days');
    const width = ctx.settings.bucket_width ?? '1d';
    if (width !== '1h' && width !== '1d') throw new ConfigError('bucket_width must be 1h or 1d', 'bucket_width');

    const now = ctx.clock.now();
    const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
    const monthStart = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
    const windowStart = today - (days - 1) * DAY_MS;

    const usage = await fetchAllPages(ctx, '/v1/organizations/usage_report/messages', {
      starting_at: rfc3339(windowStart),
      bucket_width: width,
      limit: width === '1h' ? 168 : 31,
    });
    const costs = await fetchAllPages(ctx, '/v1/organizations/cost_report', {
      starting_at: rfc3339(Math.min(monthStart, windowStart)),
      bucket_width: '1d',
      limit: 31,
    });

    const total = (buckets: Bucket[], from: number, fn: (r: Row) => number | null) =>
      sumOrNull(buckets.filter((b) => b.start >= from).map((b) => sumOrNull(b.results.map(fn))));
    const values: Record<Label, number | string | null> = {
      'Cost this month': total(costs.buckets, monthStart, costOf),
      'Cost today': total(costs.buckets, today, costOf),
      'Cost in window': total(costs.buckets, windowStart, costOf),
      'Uncached input tokens in window': total(usage.buckets, windowStart, pick['Uncached input tokens']!),
      'Cache write tokens in window': total(usage.buckets, windowStart, pick['Cache write tokens']!),
      'Cache read tokens in window': total(usage.buckets, windowStart, pick['Cache read tokens']!),
      'Output tokens in window': total(usage.buckets, windowStart, pick['Output tokens']!),
      'Web searches in window': total(usage.buckets, windowStart, pick['Web searches']!),
      'Month ends': new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString(),
    };
    const out: Metric[] = (Object.keys(metrics) as Label[]).map((label) => ({ label, value: values[label], unit: metrics[label].unit, maximum: null }));

    const bucket = (b: Bucket, metric: string, unit: string, fn: (r: Row) => number | null): NativeBucket => ({
      metric,
      window_start: new Date(b.start).toISOString(),
      window_end: new Date(b.end).toISOString(),
      value: sumOrNull(b.results.map(fn)),
      unit,
    });
    const native = [
      ...costs.buckets.map((b) => bucket(b, 'Cost', 'USD', costOf)),
      ...Object.entries(pick).flatMap(([metric, fn]) => usage.buckets.map((b) => bucket(b, metric, metric === 'Web searches' ? 'requests' : 'tokens', fn))),
    ];

    const money = (v: number | string | null) => (typeof v === 'number' ? `$${v.toFixed(2)}` : 'unknown');
    const count = (v: number | string | null) => (typeof v === 'number' ? v.toLocaleString('en-US') : 'unknown');
    const summary = `${money(values['Cost this month'])} this month, ${money(values['Cost in window'])} in the last ${days} days, ${count(values['Output tokens in window'])} output tokens`;
    const incomplete = out.some((m) => m.value === null);

    return {
      status: incomplete ? 'degraded' : 'healthy',
      summary: incomplete ? `Some values were missing from the Anthropic response: ${summary}` : summary,
      metrics: out,
      native,
      // The buckets themselves are in `native`; raw keeps only their counts.
      raw: { bucket_width: width, usage: { pages: usage.pages, buckets: usage.buckets.length }, cost: { pages: costs.pages, buckets: costs.buckets.length } },
    };
  },
});
