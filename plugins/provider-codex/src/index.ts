import {
  AuthError,
  RateLimitedError,
  SchemaDriftError,
  datetimeSpec,
  defineProvider,
  isRecord,
  parseNumber,
  parseRetryAfter,
  percentUsedSpec,
  refreshedButFailed,
  sanitizeMessage,
  throwForStatus,
  type HttpResponse,
  type Metric,
  type MetricSpec,
  type PluginContext,
  type PluginLogger,
  type ProviderUsage,
} from '@usage-monitor/core';
import {
  DEFAULT_AUTH_BASE_URL,
  accessTokenExpiry,
  accountIdFromToken,
  authBaseUrl,
  browserFlow,
  deviceFlow,
  refreshTokens,
  type CodexCredentials,
  type CodexSettings,
} from './oauth.js';

/** Refresh a little before expiry so a poll never races the token's end. */
const REFRESH_MARGIN_MS = 5 * 60 * 1000;

const metrics = {
  '5h used': percentUsedSpec('5h', '5h resets at', 'Share of the 5-hour usage window used', { utilization: true }),
  '5h resets at': datetimeSpec('When the 5-hour window resets'),
  'Weekly used': percentUsedSpec('7d', 'Weekly resets at', 'Share of the weekly usage window used (free plans only have this one)', {
    utilization: true,
    headline: true,
  }),
  'Weekly resets at': datetimeSpec('When the weekly window resets'),
  'Code review 5h used': percentUsedSpec('5h', 'Code review 5h resets at', 'Share of the 5-hour code review window used'),
  'Code review 5h resets at': datetimeSpec('When the 5-hour code review window resets'),
  'Code review weekly used': percentUsedSpec('7d', 'Code review weekly resets at', 'Share of the weekly code review window used'),
  'Code review weekly resets at': datetimeSpec('When the weekly code review window resets'),
  'Other limits 5h used': percentUsedSpec('5h', 'Other limits 5h resets at', 'Highest 5-hour usage among the additional limits (e.g. a Codex-Spark model)'),
  'Other limits 5h resets at': datetimeSpec('Reset of the additional 5-hour limit that is most used'),
  'Other limits weekly used': percentUsedSpec('7d', 'Other limits weekly resets at', 'Highest weekly usage among the additional limits'),
  'Other limits weekly resets at': datetimeSpec('Reset of the additional weekly limit that is most used'),
  'Credits balance': {
    type: 'balance',
    unit: 'credits',
    direction: 'decreasing',
    description: 'Codex credits left (null when the plan has unlimited credits or none are reported)',
  },
  'Limit reset credits': {
    type: 'balance',
    unit: 'count',
    direction: 'decreasing',
    description: 'Rate-limit resets available to redeem',
  },
} satisfies Record<string, MetricSpec>;

type Label = keyof typeof metrics;
const specOf = (label: Label): MetricSpec => metrics[label];
type Bucket = '5h' | '7d';

interface RateWindow {
  used_percent?: unknown;
  limit_window_seconds?: unknown;
  reset_after_seconds?: unknown;
  reset_at?: unknown;
}
interface RateLimit {
  allowed?: unknown;
  limit_reached?: unknown;
  primary_window?: RateWindow | null;
  secondary_window?: RateWindow | null;
}
interface UsageBody {
  plan_type?: unknown;
  rate_limit?: RateLimit | null;
  code_review_rate_limit?: RateLimit | null;
  additional_rate_limits?: Array<{ limit_name?: unknown; metered_feature?: unknown; rate_limit?: RateLimit | null }> | null;
  credits?: { has_credits?: unknown; unlimited?: unknown; balance?: unknown } | null;
  rate_limit_reset_credits?: { available_count?: unknown } | null;
}
interface Reading {
  used: number | null;
  resetsAt: string | null;
}

const percent = (v: unknown): number | null => {
  const n = parseNumber(v);
  return n === null ? null : Math.min(100, Math.max(0, Math.round(n * 100) / 100));
};

/** `reset_at` is unix seconds; `reset_after_seconds` is relative to the poll. */
function resetTime(win: RateWindow, now: Date): string | null {
  const at = parseNumber(win.reset_at);
  if (at !== null && at > 0) return new Date(at < 1e12 ? at * 1000 : at).toISOString();
  if (typeof win.reset_at === 'string') {
    const t = Date.parse(win.reset_at);
    if (!Number.isNaN(t)) return new Date(t).toISOString();
  }
  const after = parseNumber(win.reset_after_seconds);
  return after !== null && after >= 0 ? new Date(now.getTime() + after * 1000).toISOString() : null;
}

/** Windows are told apart by their length, never by slot: free plans put the weekly window in `primary_window`. */
function classify(win: RateWindow, slot: 'primary' | 'secondary', logger: PluginLogger): Bucket | null {
  const s = parseNumber(win.limit_window_seconds);
  if (s === null) return slot === 'primary' ? '5h' : '7d';
  if (s >= 2 * 3600 && s <= 12 * 3600) return '5h';
  if (s >= 5 * 86400 && s <= 9 * 86400) return '7d';
  logger.warn('Ignoring a Codex rate-limit window of unexpected length', { limit_window_seconds: s });
  return null;
}

function readWindows(rl: RateLimit | null | undefined, now: Date, logger: PluginLogger): Partial<Record<Bucket, Reading>> {
  const out: Partial<Record<Bucket, Reading>> = {};
  if (!isRecord(rl)) return out;
  for (const [slot, win] of [
    ['primary', rl.primary_window],
    ['secondary', rl.secondary_window],
  ] as const) {
    if (!isRecord(win)) continue;
    const bucket = classify(win, slot, logger);
    if (!bucket || out[bucket]) continue;
    out[bucket] = { used: percent(win.used_percent), resetsAt: resetTime(win, now) };
  }
  return out;
}

function usageRequest(ctx: PluginContext<CodexCredentials, CodexSettings>, creds: CodexCredentials): Promise<HttpResponse> {
  const headers: Record<string, string> = { authorization: `Bearer ${creds.access_token}` };
  const account = creds.account_id || accountIdFromToken(creds.id_token) || accountIdFromToken(creds.access_token);
  if (account) headers['chatgpt-account-id'] = account;
  return ctx.http.request(`${ctx.baseUrl}/wham/usage`, { headers });
}

function toUsage(body: UsageBody, now: Date, logger: PluginLogger): ProviderUsage {
  const main = readWindows(body.rate_limit, now, logger);
  const review = readWindows(body.code_review_rate_limit, now, logger);
  const other: Partial<Record<Bucket, Reading>> = {};
  for (const extra of Array.isArray(body.additional_rate_limits) ? body.additional_rate_limits : []) {
    if (!isRecord(extra)) continue;
    for (const [bucket, reading] of Object.entries(readWindows(extra.rate_limit, now, logger)) as Array<[Bucket, Reading]>) {
      const prev = other[bucket];
      if (!prev || (reading.used ?? -1) > (prev.used ?? -1)) other[bucket] = reading;
    }
  }
  const credits = isRecord(body.credits) ? body.credits : null;
  const balance = credits && credits.unlimited !== true ? parseNumber(credits.balance) : null;
  const resets = isRecord(body.rate_limit_reset_credits) ? parseNumber(body.rate_limit_reset_credits.available_count) : null;

  const values: Record<Label, number | string | null> = {
    '5h used': main['5h']?.used ?? null,
    '5h resets at': main['5h']?.resetsAt ?? null,
    'Weekly used': main['7d']?.used ?? null,
    'Weekly resets at': main['7d']?.resetsAt ?? null,
    'Code review 5h used': review['5h']?.used ?? null,
    'Code review 5h resets at': review['5h']?.resetsAt ?? null,
    'Code review weekly used': review['7d']?.used ?? null,
    'Code review weekly resets at': review['7d']?.resetsAt ?? null,
    'Other limits 5h used': other['5h']?.used ?? null,
    'Other limits 5h resets at': other['5h']?.resetsAt ?? null,
    'Other limits weekly used': other['7d']?.used ?? null,
    'Other limits weekly resets at': other['7d']?.resetsAt ?? null,
    'Credits balance': balance,
    'Limit reset credits': resets,
  };
  const out: Metric[] = (Object.keys(metrics) as Label[]).map((label) => ({
    label,
    value: values[label],
    unit: metrics[label].unit,
    maximum: specOf(label).maximum ?? null,
  }));

  const rl = isRecord(body.rate_limit) ? body.rate_limit : null;
  const reached = rl?.limit_reached === true || rl?.allowed === false || [main['5h'], main['7d']].some((r) => (r?.used ?? 0) >= 100);
  const plan = typeof body.plan_type === 'string' && body.plan_type ? body.plan_type : 'unknown plan';
  const parts = [
    main['5h']?.used != null ? `5h ${main['5h'].used}% used` : null,
    main['7d']?.used != null ? `weekly ${main['7d'].used}% used` : null,
    credits?.unlimited === true ? 'unlimited credits' : balance !== null ? `${balance} credits` : null,
  ].filter(Boolean);
  const summary = `${plan}: ${parts.length ? parts.join(', ') : 'no usage windows reported'}`;
  return {
    status: reached ? 'degraded' : 'healthy',
    summary: reached ? `Limit reached (${summary})` : summary,
    metrics: out,
    raw: body,
  };
}

export default defineProvider<CodexCredentials, CodexSettings>({
  apiVersion: 1,
  id: 'codex',
  name: 'OpenAI Codex',
  description: 'ChatGPT plan limits for Codex (5-hour and weekly windows, code review, credits) via ChatGPT sign-in.',
  icon: 'M12 3l7.8 4.5v9L12 21l-7.8-4.5v-9zM9 10l-2 2 2 2M15 10l2 2-2 2',
  docsUrl: 'https://developers.openai.com/codex/pricing',
  defaultBaseUrl: 'https://chatgpt.com/backend-api',
  auth: { kind: 'oauth', device: deviceFlow, browser: browserFlow },
  credentials: {
    type: 'object',
    additionalProperties: false,
    required: ['access_token', 'refresh_token'],
    properties: {
      access_token: { type: 'string', minLength: 8, maxLength: 20000, writeOnly: true, title: 'Access token', description: 'tokens.access_token of ~/.codex/auth.json' },
      refresh_token: { type: 'string', minLength: 8, maxLength: 20000, writeOnly: true, title: 'Refresh token', description: 'tokens.refresh_token (single-use: it rotates on every refresh)' },
      id_token: { type: ['string', 'null'], maxLength: 20000, writeOnly: true, title: 'ID token', description: 'Optional: tokens.id_token (carries the account id)' },
      account_id: { type: ['string', 'null'], maxLength: 200, writeOnly: true, title: 'Account id', description: 'Optional: tokens.account_id (the ChatGPT workspace)' },
      expires_at: {
        type: ['string', 'number', 'null'],
        writeOnly: true,
        title: 'Access token expiry',
        description: 'Optional: epoch milliseconds or seconds, or an ISO datetime; read from the token when absent',
      },
    },
  },
  settings: {
    type: 'object',
    additionalProperties: false,
    properties: {
      auth_base_url: {
        type: 'string',
        pattern: '^https?://',
        maxLength: 300,
        default: DEFAULT_AUTH_BASE_URL,
        title: 'Auth server',
        description: 'The OpenAI auth server used for sign-in and token refresh',
      },
    },
  },
  metrics,
  capabilities: { native_history: false, oauth: true },

  async fetchUsage(ctx) {
    const now = ctx.clock.now();
    let creds: CodexCredentials = { ...ctx.credentials };
    if (typeof creds.access_token !== 'string' || !creds.access_token) throw new AuthError('No access token is stored; sign in again');
    const authBase = authBaseUrl(ctx.settings);
    let rotated: CodexCredentials | undefined;

    const expiry = accessTokenExpiry(creds);
    if (expiry && expiry.getTime() - now.getTime() < REFRESH_MARGIN_MS) {
      rotated = creds = await refreshTokens(ctx.http, authBase, creds, now);
    }

    let body: UsageBody;
    try {
      let res = await usageRequest(ctx, creds);
      if (res.status === 401 && !rotated && creds.refresh_token) {
        rotated = creds = await refreshTokens(ctx.http, authBase, creds, now);
        res = await usageRequest(ctx, creds);
      }
      if (res.status === 429) {
        // Parsed against the poll's clock: an HTTP-date Retry-After must not depend on the host's time.
        throw new RateLimitedError('ChatGPT rate-limited the usage request (HTTP 429)', parseRetryAfter(res.headers['retry-after'], now));
      }
      const secrets = [creds.access_token, creds.refresh_token, creds.id_token ?? '', ctx.credentials.refresh_token];
      throwForStatus(res, (m) => sanitizeMessage(m, secrets));
      body = res.json<UsageBody>();
    } catch (err) {
      // The old refresh token is spent: a failure after a refresh must still hand back the new tokens.
      if (!rotated) throw err;
      return refreshedButFailed(err, rotated, metrics);
    }
    if (!isRecord(body) || !('rate_limit' in body)) throw new SchemaDriftError('The Codex usage response has no rate_limit');
    const usage = toUsage(body, now, ctx.logger);
    return rotated ? { ...usage, credentials: rotated } : usage;
  },
});
