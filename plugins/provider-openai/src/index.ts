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
  project_ids?: string[];
}

interface Bucket {
  start_time?: unknown;
  end_time?: unknown;
  results?: Array<Record<string, unknown>>;
}

type Ctx = PluginContext<Credentials, Settings>;

const DAY = 86_400;
const MAX_PAGES = 20;
const DEFAULT_WINDOW_DAYS = 30;

const metrics = {
  'Cost this month': { type: 'counter', unit: 'USD', direction: 'increasing', window: 'billing_period', reset_metric: 'Month ends', headline: true, description: 'Organization cost since the start of the current UTC month' },
  'Cost today': { type: 'counter', unit: 'USD', direction: 'increasing', window: '24h', description: 'Organization cost in the current UTC day' },
  'Cost in window': { type: 'rolling_total', unit: 'USD', direction: 'increasing', description: 'Organization cost over the last `window_days` UTC days (30 by default), today included' },
  'Input tokens in window': { type: 'rolling_total', unit: 'tokens', direction: 'increasing', description: 'Completions input tokens over the window (cached tokens included)' },
  'Cached input tokens in window': { type: 'rolling_total', unit: 'tokens', direction: 'increasing', description: 'Completions input tokens served from the prompt cache over the window' },
  'Output tokens in window': { type: 'rolling_total', unit: 'tokens', direction: 'increasing', description: 'Completions output tokens over the window' },
  'Requests in window': { type: 'rolling_total', unit: 'requests', direction: 'increasing', description: 'Completions model requests over the window' },
  'Month ends': datetimeSpec('Start of the next UTC month, when the month-to-date cost starts over'),
} satisfies Record<string, MetricSpec>;

type Label = keyof typeof metrics;

const iso = (unixSeconds: number) => new Date(unixSeconds * 1000).toISOString();

/** Fetches every page of an organization usage/costs endpoint (`has_more`/`next_page` -> `page`). */
async function fetchAllPages(ctx: Ctx, path: string, query: Record<string, string | number | string[]>) {
  const buckets: Array<Bucket & { start: number; end: number }> = [];
  let page: string | undefined;
  for (let pages = 1; ; pages++) {
    const body = await ctx.http.getJson<{ data?: unknown; has_more?: unknown; next_page?: unknown }>(`${ctx.baseUrl}${path}`, {
      headers: { authorization: `Bearer ${ctx.credentials.api_key}` },
      query: { ...query, page },
    });
    if (!body || !Array.isArray(body.data)) throw new SchemaDriftError(`OpenAI ${path} response has no data array`);
    for (const b of body.data as Bucket[]) {
      const start = parseNumber(b?.start_time);
      const end = parseNumber(b?.end_time);
      if (start === null || end === null || !Array.isArray(b.results)) {
        throw new SchemaDriftError(`OpenAI ${path} bucket lacks start_time, end_time or results`);
      }
      buckets.push({ ...b, start, end });
    }
    if (body.has_more !== true || typeof body.next_page !== 'string' || body.next_page === '') return { buckets, pages };
    if (pages >= MAX_PAGES) throw new UpstreamError(`OpenAI ${path} still had more pages after ${MAX_PAGES}`);
    page = body.next_page;
  }
}

const costOf = (r: Record<string, unknown>): number | null => {
  const amount = r.amount as { value?: unknown; currency?: unknown } | undefined;
  if (typeof amount?.currency === 'string' && amount.currency.toLowerCase() !== 'usd') return null;
  return parseNumber(amount?.value);
};
const field = (name: string) => (r: Record<string, unknown>) => parseNumber(r[name]);

export default defineProvider<Credentials, Settings>({
  apiVersion: 1,
  id: 'openai',
  name: 'OpenAI',
  description: 'Organization costs and completions token usage of an OpenAI organization (Admin API key).',
  icon: 'M12 3l7.8 4.5v9L12 21l-7.8-4.5v-9z',
  docsUrl: 'https://platform.openai.com/docs/api-reference/usage',
  defaultBaseUrl: 'https://api.openai.com/v1',
  auth: { kind: 'api_key' },
  credentials: apiKeyCredentials('An OpenAI Admin key (sk-admin-...); project keys lack the api.usage.read scope', { title: 'Admin API key' }),
  settings: {
    type: 'object',
    additionalProperties: false,
    properties: {
      window_days: { type: 'integer', minimum: 1, maximum: 90, default: DEFAULT_WINDOW_DAYS, title: 'Window (days)', description: 'How many UTC days (today included) the window metrics and history cover' },
      project_ids: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 100 }, maxItems: 50, default: [], title: 'Project ids', description: 'Only count these projects (proj_...); empty counts the whole organization' },
    },
  },
  metrics,
  capabilities: { native_history: true },

  async fetchUsage(ctx) {
    const days = ctx.settings.window_days ?? DEFAULT_WINDOW_DAYS;
    if (!Number.isInteger(days) || days < 1 || days > 90) throw new ConfigError('window_days must be an integer from 1 to 90', 'window_days');
    const projects = ctx.settings.project_ids ?? [];

    const now = ctx.clock.now();
    const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) / 1000;
    const monthStart = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1) / 1000;
    const windowStart = today - (days - 1) * DAY;
    const query = {
      start_time: Math.min(monthStart, windowStart),
      bucket_width: '1d',
      limit: 31,
      ...(projects.length ? { project_ids: projects } : {}),
    };

    const costs = await fetchAllPages(ctx, '/organization/costs', query);
    const usage = await fetchAllPages(ctx, '/organization/usage/completions', query);

    const total = (buckets: typeof costs.buckets, from: number, pick: (r: Record<string, unknown>) => number | null) =>
      sumOrNull(buckets.filter((b) => b.start >= from).map((b) => sumOrNull(b.results!.map(pick))));

    const values: Record<Label, number | string | null> = {
      'Cost this month': total(costs.buckets, monthStart, costOf),
      'Cost today': total(costs.buckets, today, costOf),
      'Cost in window': total(costs.buckets, windowStart, costOf),
      'Input tokens in window': total(usage.buckets, windowStart, field('input_tokens')),
      'Cached input tokens in window': total(usage.buckets, windowStart, field('input_cached_tokens')),
      'Output tokens in window': total(usage.buckets, windowStart, field('output_tokens')),
      'Requests in window': total(usage.buckets, windowStart, field('num_model_requests')),
      'Month ends': new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString(),
    };
    const out: Metric[] = (Object.keys(metrics) as Label[]).map((label) => ({ label, value: values[label], unit: metrics[label].unit, maximum: null }));

    const bucketsOf = (list: typeof costs.buckets, metric: string, unit: string, pick: (r: Record<string, unknown>) => number | null): NativeBucket[] =>
      list.map((b) => ({ metric, window_start: iso(b.start), window_end: iso(b.end), value: sumOrNull(b.results!.map(pick)), unit }));
    const native = [
      ...bucketsOf(costs.buckets, 'Cost', 'USD', costOf),
      ...bucketsOf(usage.buckets, 'Input tokens', 'tokens', field('input_tokens')),
      ...bucketsOf(usage.buckets, 'Output tokens', 'tokens', field('output_tokens')),
      ...bucketsOf(usage.buckets, 'Requests', 'requests', field('num_model_requests')),
    ];

    const money = (v: number | string | null) => (typeof v === 'number' ? `$${v.toFixed(2)}` : 'unknown');
    const count = (v: number | string | null) => (typeof v === 'number' ? v.toLocaleString('en-US') : 'unknown');
    const summary = `${money(values['Cost this month'])} this month, ${money(values['Cost in window'])} in the last ${days} days, ${count(values['Input tokens in window'])} input / ${count(values['Output tokens in window'])} output tokens, ${count(values['Requests in window'])} requests`;
    const incomplete = out.some((m) => m.value === null);

    return {
      status: incomplete ? 'degraded' : 'healthy',
      summary: incomplete ? `Some values were missing from the OpenAI response: ${summary}` : summary,
      metrics: out,
      native,
      // The buckets themselves are in `native`; raw keeps only what was asked and how much came back.
      raw: { query, costs: { pages: costs.pages, buckets: costs.buckets.length }, completions: { pages: usage.pages, buckets: usage.buckets.length } },
    };
  },
});
