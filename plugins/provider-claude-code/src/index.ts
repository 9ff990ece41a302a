import {
  AuthError,
  RateLimitedError,
  SchemaDriftError,
  UpstreamError,
  datetimeSpec,
  defineProvider,
  finiteNumber,
  isRecord,
  parseRetryAfter,
  percentUsedSpec,
  refreshedButFailed,
  sanitizeMessage,
  throwForStatus,
  type HttpClient,
  type HttpResponse,
  type Metric,
  type MetricSpec,
  type PluginContext,
  type ProviderUsage,
} from '@usage-monitor/core';

/** The public OAuth client of Claude Code; its refresh tokens are only accepted with this id. */
export const CLIENT_ID = '9d1c250a-e61b-44d9-88ed-5944d1962f5e';
const DEFAULT_AUTH_BASE_URL = 'https://platform.claude.com';
const DEFAULT_USER_AGENT = 'claude-code/2.0.0';
/** The usage endpoint refuses OAuth tokens without this beta flag. */
const OAUTH_BETA = 'oauth-2025-04-20';
const REFRESH_MARGIN_MS = 5 * 60 * 1000;

export type ClaudeCredentials = {
  access_token: string;
  refresh_token: string;
  /** ISO datetime or epoch milliseconds (`expiresAt` of ~/.claude/.credentials.json); seconds are accepted too. */
  expires_at?: string | number | null;
};

export type ClaudeSettings = {
  auth_base_url?: string;
  user_agent?: string;
};

const metrics = {
  'Session used': percentUsedSpec('5h', 'Session resets at', 'Share of the 5-hour session limit used', { utilization: true }),
  'Session resets at': datetimeSpec('When the 5-hour session window resets'),
  'Weekly used': percentUsedSpec('7d', 'Weekly resets at', 'Share of the weekly limit (all models) used', { utilization: true, headline: true }),
  'Weekly resets at': datetimeSpec('When the weekly window resets'),
  'Weekly Opus used': percentUsedSpec('7d', 'Weekly Opus resets at', 'Share of the weekly Opus limit used'),
  'Weekly Opus resets at': datetimeSpec('When the weekly Opus window resets'),
  'Weekly Sonnet used': percentUsedSpec('7d', 'Weekly Sonnet resets at', 'Share of the weekly Sonnet limit used'),
  'Weekly Sonnet resets at': datetimeSpec('When the weekly Sonnet window resets'),
  'Weekly OAuth apps used': percentUsedSpec('7d', 'Weekly OAuth apps resets at', 'Share of the weekly limit for OAuth apps used'),
  'Weekly OAuth apps resets at': datetimeSpec('When the weekly OAuth apps window resets'),
  'Extra usage spent': {
    type: 'counter',
    unit: 'USD',
    direction: 'increasing',
    window: 'billing_period',
    capacity_metric: 'Extra usage limit',
    description: 'Pay-as-you-go usage beyond the plan this month (reported in cents, shown in dollars)',
  },
  'Extra usage limit': { type: 'gauge', unit: 'USD', direction: 'increasing', description: 'The monthly extra usage spending limit' },
  'Extra usage used': percentUsedSpec('billing_period', null, 'Share of the monthly extra usage limit spent'),
} satisfies Record<string, MetricSpec>;

type Label = keyof typeof metrics;
const specOf = (label: Label): MetricSpec => metrics[label];

/** Upstream window keys and the labels they fill; unknown (experimental) keys are ignored. */
const WINDOWS: Array<[key: string, used: Label, reset: Label]> = [
  ['five_hour', 'Session used', 'Session resets at'],
  ['seven_day', 'Weekly used', 'Weekly resets at'],
  ['seven_day_opus', 'Weekly Opus used', 'Weekly Opus resets at'],
  ['seven_day_sonnet', 'Weekly Sonnet used', 'Weekly Sonnet resets at'],
  ['seven_day_oauth_apps', 'Weekly OAuth apps used', 'Weekly OAuth apps resets at'],
];

const str = (v: unknown): string | null => (typeof v === 'string' && v.trim() !== '' ? v : null);
const round = (v: number, digits = 2) => Math.round(v * 10 ** digits) / 10 ** digits;
const percent = (v: unknown): number | null => {
  const n = finiteNumber(v);
  return n === null ? null : Math.min(100, Math.max(0, round(n)));
};
/** `resets_at` comes with microseconds and an offset (`...00.412907+00:00`); normalized to ISO UTC. */
const isoTime = (v: unknown): string | null => {
  if (typeof v !== 'string' || !v.trim()) return null;
  const t = Date.parse(v);
  return Number.isNaN(t) ? null : new Date(t).toISOString();
};

function tokenExpiry(creds: ClaudeCredentials): Date | null {
  const e = creds.expires_at;
  const n = typeof e === 'number' ? e : typeof e === 'string' && /^\d+(\.\d+)?$/.test(e.trim()) ? Number(e) : null;
  if (n !== null && Number.isFinite(n)) return new Date(n < 1e12 ? n * 1000 : n);
  if (typeof e === 'string') {
    const t = Date.parse(e);
    if (!Number.isNaN(t)) return new Date(t);
  }
  return null;
}

function oauthErrorCode(text: string): string | null {
  try {
    const body = JSON.parse(text) as Record<string, unknown>;
    const e = body.error;
    const code = isRecord(e) ? e.type : e;
    return typeof code === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(code) ? code : null;
  } catch {
    return null;
  }
}

/** Claude Code's refresh: JSON body with the client id. Refresh tokens rotate, so the new pair must be stored. */
async function refreshTokens(http: HttpClient, settings: ClaudeSettings, creds: ClaudeCredentials, now: Date): Promise<ClaudeCredentials> {
  if (!str(creds.refresh_token)) throw new AuthError('The access token expired and no refresh token is stored; paste new credentials');
  const base = (str(settings.auth_base_url) ?? DEFAULT_AUTH_BASE_URL).replace(/\/+$/, '');
  const res = await http.request(`${base}/v1/oauth/token`, {
    method: 'POST',
    json: { grant_type: 'refresh_token', refresh_token: creds.refresh_token, client_id: CLIENT_ID },
  });
  if (res.status === 429) throw new RateLimitedError('Anthropic rate-limited the token refresh (HTTP 429)', parseRetryAfter(res.headers['retry-after'], now));
  if (res.status >= 500) throw new UpstreamError(`The Anthropic token refresh failed (HTTP ${res.status})`, res.status);
  if (res.status < 200 || res.status >= 300) {
    const code = oauthErrorCode(res.text);
    throw new AuthError(`Anthropic rejected the refresh token (HTTP ${res.status}${code ? `: ${code}` : ''}); sign in to Claude Code again and paste new credentials`, res.status);
  }
  const body = res.json<Record<string, unknown>>();
  const access = isRecord(body) ? str(body.access_token) : null;
  if (!access) throw new SchemaDriftError('The Anthropic token response has no access_token');
  const expiresIn = finiteNumber(body.expires_in);
  return {
    access_token: access,
    refresh_token: str(body.refresh_token) ?? creds.refresh_token,
    // Epoch milliseconds, like Claude Code's own expiresAt.
    expires_at: expiresIn !== null && expiresIn > 0 ? now.getTime() + expiresIn * 1000 : null,
  };
}

function usageRequest(ctx: PluginContext<ClaudeCredentials, ClaudeSettings>, creds: ClaudeCredentials): Promise<HttpResponse> {
  return ctx.http.request(`${ctx.baseUrl}/api/oauth/usage`, {
    headers: {
      authorization: `Bearer ${creds.access_token}`,
      'anthropic-beta': OAUTH_BETA,
      'user-agent': str(ctx.settings.user_agent) ?? DEFAULT_USER_AGENT,
    },
  });
}

function toUsage(body: Record<string, unknown>, ctx: PluginContext<ClaudeCredentials, ClaudeSettings>): ProviderUsage {
  const values: Partial<Record<Label, number | string | null>> = {};
  for (const [key, used, reset] of WINDOWS) {
    const w = body[key];
    values[used] = isRecord(w) ? percent(w.utilization) : null;
    values[reset] = isRecord(w) ? isoTime(w.resets_at) : null;
  }
  const extra = isRecord(body.extra_usage) ? body.extra_usage : null;
  const currency = extra ? str(extra.currency) : null;
  // Amounts are cents of the account's currency; only USD matches the declared unit.
  const moneyOk = extra !== null && (currency === null || currency.toUpperCase() === 'USD');
  if (extra && !moneyOk) ctx.logger.warn('Claude extra usage is not billed in USD; amounts are left out', { currency });
  const cents = (v: unknown) => {
    const n = moneyOk ? finiteNumber(v) : null;
    return n === null ? null : round(n / 100, 2);
  };
  values['Extra usage spent'] = extra ? cents(extra.used_credits) : null;
  values['Extra usage limit'] = extra ? cents(extra.monthly_limit) : null;
  values['Extra usage used'] = extra ? percent(extra.utilization) : null;

  const out: Metric[] = (Object.keys(metrics) as Label[]).map((label) => ({
    label,
    value: values[label] ?? null,
    unit: specOf(label).unit,
    maximum: label === 'Extra usage spent' ? ((values['Extra usage limit'] as number | null) ?? null) : (specOf(label).maximum ?? null),
  }));

  const session = values['Session used'] as number | null;
  const weekly = values['Weekly used'] as number | null;
  const exhausted = WINDOWS.some(([, used]) => ((values[used] as number | null) ?? 0) >= 100);
  const parts = [
    session !== null ? `session ${session}% used` : null,
    weekly !== null ? `weekly ${weekly}% used` : null,
    values['Extra usage spent'] != null ? `$${(values['Extra usage spent'] as number).toFixed(2)} extra usage` : null,
  ].filter(Boolean);
  const summary = parts.length ? parts.join(', ') : 'no usage windows reported';
  return {
    status: exhausted ? 'degraded' : 'healthy',
    summary: exhausted ? `Limit reached: ${summary}` : summary,
    metrics: out,
    raw: body,
  };
}

export default defineProvider<ClaudeCredentials, ClaudeSettings>({
  apiVersion: 1,
  id: 'claude-code',
  name: 'Claude Code (Pro/Max)',
  description: 'Claude Pro/Max session and weekly limits, read with your Claude Code sign-in (undocumented endpoint).',
  icon: 'M12 3v18M3 12h18M5.6 5.6l12.8 12.8M18.4 5.6L5.6 18.4',
  docsUrl: 'https://support.claude.com/en/articles/11145838-using-claude-code-with-your-pro-or-max-plan',
  defaultBaseUrl: 'https://api.anthropic.com',
  // The user pastes Claude Code's own tokens: no sign-in flow is offered (see README), so the
  // server treats the credentials like a key; the plugin refreshes and rotates them itself.
  auth: { kind: 'api_key' },
  credentials: {
    type: 'object',
    additionalProperties: false,
    required: ['access_token', 'refresh_token'],
    properties: {
      access_token: { type: 'string', minLength: 8, maxLength: 4000, writeOnly: true, title: 'Access token', description: 'claudeAiOauth.accessToken (sk-ant-oat01-...)' },
      refresh_token: { type: 'string', minLength: 8, maxLength: 4000, writeOnly: true, title: 'Refresh token', description: 'claudeAiOauth.refreshToken (sk-ant-ort01-...)' },
      expires_at: {
        type: ['string', 'number', 'null'],
        writeOnly: true,
        title: 'Expires at',
        description: 'claudeAiOauth.expiresAt (epoch milliseconds) or an ISO datetime',
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
        title: 'Token server',
        description: 'Where tokens are refreshed ({auth_base_url}/v1/oauth/token)',
      },
      user_agent: { type: 'string', minLength: 1, maxLength: 200, default: DEFAULT_USER_AGENT, title: 'User-Agent' },
    },
  },
  metrics,
  capabilities: { native_history: false },

  async fetchUsage(ctx) {
    const now = ctx.clock.now();
    let creds: ClaudeCredentials = { ...ctx.credentials };
    if (!str(creds.access_token)) throw new AuthError('No access token is stored; paste the Claude Code credentials');
    let rotated: ClaudeCredentials | undefined;
    const expiry = tokenExpiry(creds);
    if (expiry && expiry.getTime() - now.getTime() < REFRESH_MARGIN_MS) {
      rotated = creds = await refreshTokens(ctx.http, ctx.settings, creds, now);
    }

    let body: unknown;
    try {
      let res = await usageRequest(ctx, creds);
      if (res.status === 401 && !rotated) {
        rotated = creds = await refreshTokens(ctx.http, ctx.settings, creds, now);
        res = await usageRequest(ctx, creds);
      }
      if (res.status === 403) {
        throw new AuthError('Anthropic refused the token (HTTP 403): it was revoked or lacks the user:profile scope', 403);
      }
      if (res.status === 429) {
        // Parsed against the poll's clock: an HTTP-date Retry-After must not depend on the host's time.
        throw new RateLimitedError('Anthropic rate-limited the usage request (HTTP 429)', parseRetryAfter(res.headers['retry-after'], now));
      }
      const secrets = [creds.access_token, creds.refresh_token, ctx.credentials.refresh_token];
      throwForStatus(res, (m) => sanitizeMessage(m, secrets));
      body = res.json();
    } catch (err) {
      // Refresh tokens rotate: after a refresh, a failed usage call must still hand back the new pair.
      if (!rotated) throw err;
      return refreshedButFailed(err, rotated, metrics);
    }
    if (!isRecord(body) || !WINDOWS.some(([key]) => key in body)) {
      throw new SchemaDriftError('The Claude usage response has none of the known windows (five_hour, seven_day, ...)');
    }
    const usage = toUsage(body, ctx);
    return rotated ? { ...usage, credentials: rotated } : usage;
  },
});
