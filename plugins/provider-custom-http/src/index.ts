import {
  ConfigError,
  METRIC_TYPES,
  METRIC_WINDOWS,
  SchemaDriftError,
  defineProvider,
  redactDeep,
  secretValues,
  type Metric,
  type MetricDirection,
  type MetricSpec,
  type MetricType,
  type MetricWindow,
} from '@usage-monitor/core';

interface Credentials {
  secret?: string | null;
}
export interface MetricConfig {
  label: string;
  path: string;
  unit: string;
  type?: MetricType;
  direction?: MetricDirection;
  window?: MetricWindow;
  maximum_path?: string;
  maximum?: number;
  headline?: boolean;
  utilization?: boolean;
  reset_metric?: string;
}
export interface Settings {
  url: string;
  method?: 'GET' | 'POST';
  body?: unknown;
  auth_header?: string;
  auth_template?: string;
  metrics: MetricConfig[];
}

/** `data.credits.remaining`, `items[0].value`, `[2].count`: keys separated by dots, array indexes in brackets. */
const PATH = '^(?:[^.\\[\\]]+|\\[\\d+\\])(?:\\.[^.\\[\\]]+|\\[\\d+\\])*$';
const FORBIDDEN_HEADERS = new Set(['host', 'content-length', 'content-type', 'transfer-encoding', 'connection', 'cookie']);
const RAW_LIMIT = 64 * 1024;

const metricItem = {
  type: 'object',
  additionalProperties: false,
  required: ['label', 'path', 'unit'],
  properties: {
    label: { type: 'string', minLength: 1, maxLength: 120, title: 'Label' },
    path: { type: 'string', minLength: 1, maxLength: 500, pattern: PATH, title: 'JSON path of the value', description: 'e.g. data.credits.remaining or items[0].value' },
    unit: { type: 'string', minLength: 1, maxLength: 40, not: { const: 'text' }, title: 'Unit', description: 'USD, credits, requests, tokens, percent, datetime (ISO or unix time values), ...' },
    type: { enum: [...METRIC_TYPES], default: 'gauge', title: 'Metric type' },
    direction: { enum: ['increasing', 'decreasing'], title: 'Direction', description: 'Default: decreasing for remaining/balance, else increasing' },
    window: { enum: [...METRIC_WINDOWS], title: 'Quota window' },
    maximum_path: { type: 'string', minLength: 1, maxLength: 500, pattern: PATH, title: 'JSON path of the maximum' },
    maximum: { type: 'number', title: 'Fixed maximum', description: 'Used when maximum_path is unset or missing' },
    headline: { type: 'boolean', title: 'Headline metric', description: 'Default: the first numeric metric' },
    utilization: { type: 'boolean', title: 'Quota utilization metric' },
    reset_metric: { type: 'string', minLength: 1, maxLength: 120, title: 'Label of the datetime metric holding this window’s reset' },
  },
} as const;

function tokens(path: string): string[] {
  return [...path.matchAll(/[^.[\]]+|\[(\d+)\]/g)].map((m) => m[1] ?? m[0]);
}
function lookup(root: unknown, path: string): { found: boolean; value?: unknown } {
  let cur = root;
  for (const key of tokens(path)) {
    if (cur === null || typeof cur !== 'object' || !Object.hasOwn(cur, key)) return { found: false };
    cur = (cur as Record<string, unknown>)[key];
  }
  return { found: true, value: cur };
}
const NUMERIC = /^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/;
function toNumber(v: unknown): number | null {
  const n = typeof v === 'string' && NUMERIC.test(v) ? Number(v) : v;
  return typeof n === 'number' && Number.isFinite(n) ? n : null;
}
function toDatetime(v: unknown): string | null {
  const n = toNumber(v);
  const ms = n !== null ? (Math.abs(n) < 1e11 ? n * 1000 : n) : typeof v === 'string' ? Date.parse(v) : NaN;
  return Number.isFinite(ms) && Math.abs(ms) <= 8.64e15 ? new Date(ms).toISOString() : null;
}

/** The connection's metric specs, from `settings.metrics`; throws ConfigError on an inconsistent list. */
export function metricsFor(settings: Settings): Record<string, MetricSpec> {
  const list = Array.isArray(settings?.metrics) ? settings.metrics : [];
  if (list.length < 1 || list.length > 50) throw new ConfigError('Configure between 1 and 50 metrics', 'metrics');
  const flagged = list.findIndex((m) => m.headline);
  const headline = flagged >= 0 ? flagged : list.findIndex((m) => m.unit !== 'datetime');
  const specs: Record<string, MetricSpec> = {};
  list.forEach((m, i) => {
    if (Object.hasOwn(specs, m.label)) throw new ConfigError(`Metric label "${m.label}" is used twice`, 'metrics');
    const type = m.type ?? 'gauge';
    if (type === 'percent_used' && m.unit !== 'percent') throw new ConfigError(`Metric "${m.label}": type percent_used needs unit "percent"`, 'metrics');
    specs[m.label] = {
      type,
      unit: m.unit,
      direction: m.direction ?? (type === 'remaining' || type === 'balance' ? 'decreasing' : 'increasing'),
      description: `Read from ${m.path}`,
      ...(m.window ? { window: m.window } : {}),
      ...(m.maximum !== undefined ? { maximum: m.maximum } : {}),
      ...(m.reset_metric ? { reset_metric: m.reset_metric } : {}),
      ...(i === headline ? { headline: true } : {}),
      ...(m.utilization ? { utilization: true } : {}),
    };
  });
  for (const m of list) {
    if (m.reset_metric && specs[m.reset_metric]?.unit !== 'datetime') {
      throw new ConfigError(`Metric "${m.label}": reset_metric "${m.reset_metric}" must name a metric with unit "datetime"`, 'metrics');
    }
  }
  return specs;
}

const plugin = defineProvider<Credentials, Settings>({
  apiVersion: 1,
  id: 'custom-http',
  name: 'Custom HTTP',
  description: 'Reads numbers from any JSON endpoint by JSON path; the metrics (label, path, unit, type) are configured per connection.',
  icon: 'M8 7l-5 5 5 5M16 7l5 5-5 5',
  // Unused: the endpoint is the `url` setting. Required by the descriptor schema.
  defaultBaseUrl: 'https://example.invalid',
  auth: { kind: 'api_key' },
  credentials: {
    type: 'object',
    additionalProperties: false,
    properties: {
      secret: { type: ['string', 'null'], maxLength: 4000, writeOnly: true, title: 'Secret', description: 'Inserted into the auth header by auth_template; leave empty for public endpoints' },
    },
  },
  settings: {
    type: 'object',
    additionalProperties: false,
    required: ['url', 'metrics'],
    properties: {
      url: { type: 'string', minLength: 8, maxLength: 2000, pattern: '^https?://', title: 'URL', description: 'The full JSON endpoint URL (http or https)' },
      method: { enum: ['GET', 'POST'], default: 'GET', title: 'Method' },
      body: { title: 'JSON body', description: 'Sent with POST' },
      auth_header: { type: 'string', minLength: 1, maxLength: 100, pattern: "^[A-Za-z0-9!#$%&'*+.^_`|~-]+$", default: 'Authorization', title: 'Auth header name' },
      auth_template: { type: 'string', minLength: 1, maxLength: 500, pattern: '\\{secret\\}', default: 'Bearer {secret}', title: 'Auth header value', description: '{secret} is replaced by the secret' },
      metrics: { type: 'array', minItems: 1, maxItems: 50, items: metricItem, title: 'Metrics' },
    },
  },
  metrics: {
    Value: { type: 'gauge', unit: 'value', direction: 'increasing', description: 'Placeholder: a custom HTTP connection returns the metrics its settings define (capabilities.dynamic_metrics, metricsFor)' },
  },
  // The metrics of a connection are defined by its settings (core's dynamic metrics contract, see README).
  capabilities: { native_history: false, user_supplied_urls: true, dynamic_metrics: true },
  metricsFor,

  async fetchUsage(ctx) {
    const s = ctx.settings;
    const specs = metricsFor(s);
    const headers: Record<string, string> = {};
    const secret = ctx.credentials?.secret;
    if (typeof secret === 'string' && secret !== '') {
      const name = (s.auth_header ?? 'Authorization').toLowerCase();
      if (FORBIDDEN_HEADERS.has(name)) throw new ConfigError(`auth_header may not be ${name}`, 'auth_header');
      if (/[\r\n\0]/.test(secret)) throw new ConfigError('The secret contains a line break', 'secret');
      headers[name] = (s.auth_template ?? 'Bearer {secret}').split('{secret}').join(secret);
    }
    const method = s.method ?? 'GET';
    const body = await ctx.http.getJson<unknown>(s.url, { method, headers, ...(method === 'POST' && s.body !== undefined ? { json: s.body } : {}) });

    let found = 0;
    const picked: Array<{ label: string; path: string; value: unknown }> = [];
    const out: Metric[] = s.metrics.map((m) => {
      const hit = lookup(body, m.path);
      if (hit.found) found++;
      picked.push({ label: m.label, path: m.path, value: hit.value ?? null });
      const value = m.unit === 'datetime' ? toDatetime(hit.value) : toNumber(hit.value);
      const pathMax = m.maximum_path ? toNumber(lookup(body, m.maximum_path).value) : null;
      return { label: m.label, value, unit: m.unit, maximum: pathMax ?? m.maximum ?? (m.unit === 'percent' ? 100 : null) };
    });
    if (found === 0) throw new SchemaDriftError(`None of the ${s.metrics.length} configured paths exist in the response`);

    const exhausted = out.some((m) => {
      const type = specs[m.label]!.type;
      return typeof m.value === 'number' && (((type === 'remaining' || type === 'balance') && m.value <= 0) || (type === 'percent_used' && m.value >= 100));
    });
    const shown = out.filter((m) => m.unit !== 'datetime').slice(0, 5);
    const summary = shown.map((m) => `${m.label}: ${m.value ?? 'n/a'}${m.unit === 'percent' ? '%' : ` ${m.unit}`}`).join(', ') || `${out.length} metrics`;
    const secrets = secretValues(ctx.credentials);
    const size = JSON.stringify(body)?.length ?? 0;
    const raw = redactDeep({ picked, ...(size <= RAW_LIMIT ? { body } : { body_omitted_bytes: size }) }, secrets);
    return { status: exhausted ? 'degraded' : 'healthy', summary, metrics: out, raw };
  },
});

export default plugin;
