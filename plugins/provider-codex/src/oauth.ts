import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import {
  AuthError,
  RateLimitedError,
  SchemaDriftError,
  UpstreamError,
  parseRetryAfter,
  sanitizeMessage,
  type HttpClient,
  type HttpResponse,
  type OAuthBrowserFlow,
  type OAuthContext,
  type OAuthDeviceFlow,
  type OAuthStepResult,
} from '@usage-monitor/core';

/** The public OAuth client of the Codex CLI; ChatGPT only issues Codex-scoped tokens to it. */
export const CLIENT_ID = 'app_EMoamEEZ73f0CkXaXp7hrann';
export const DEFAULT_AUTH_BASE_URL = 'https://auth.openai.com';
/** The only redirect URI the client allows for the browser flow: the user pastes the URL back. */
export const BROWSER_REDIRECT_URI = 'http://localhost:1455/auth/callback';
const SCOPE = 'openid profile email offline_access';
const DEVICE_CODE_TTL_S = 15 * 60;
const BROWSER_FLOW_TTL_S = 10 * 60;
const DEFAULT_INTERVAL_S = 5;

export type CodexCredentials = {
  access_token: string;
  refresh_token: string;
  id_token?: string | null;
  account_id?: string | null;
  /** Epoch milliseconds (as stored after a refresh), epoch seconds, or an ISO datetime as pasted. */
  expires_at?: string | number | null;
};

export type CodexSettings = {
  auth_base_url?: string;
};

export function authBaseUrl(settings: CodexSettings | undefined): string {
  const v = typeof settings?.auth_base_url === 'string' && settings.auth_base_url.trim() ? settings.auth_base_url.trim() : DEFAULT_AUTH_BASE_URL;
  return v.replace(/\/+$/, '');
}

const str = (v: unknown): string | null => (typeof v === 'string' && v.trim() !== '' ? v : null);
const b64url = (buf: Buffer) => buf.toString('base64url');

/** The payload of a JWT, unverified: only used to read `exp` and the ChatGPT account id. */
export function jwtClaims(token: string | null | undefined): Record<string, unknown> | null {
  const part = token?.split('.')[1];
  if (!part) return null;
  try {
    const claims = JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as unknown;
    return claims && typeof claims === 'object' ? (claims as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

export function accountIdFromToken(token: string | null | undefined): string | null {
  const auth = jwtClaims(token)?.['https://api.openai.com/auth'];
  return auth && typeof auth === 'object' ? str((auth as Record<string, unknown>).chatgpt_account_id) : null;
}

/** Parses `expires_at` (ISO, epoch s or epoch ms), else the access token's `exp` claim. */
export function accessTokenExpiry(creds: CodexCredentials): Date | null {
  const e = creds.expires_at;
  if (typeof e === 'number' && Number.isFinite(e)) return new Date(e < 1e12 ? e * 1000 : e);
  if (typeof e === 'string' && e.trim()) {
    const asNumber = Number(e);
    if (Number.isFinite(asNumber)) return new Date(asNumber < 1e12 ? asNumber * 1000 : asNumber);
    const t = Date.parse(e);
    if (!Number.isNaN(t)) return new Date(t);
  }
  const exp = jwtClaims(creds.access_token)?.exp;
  return typeof exp === 'number' && Number.isFinite(exp) ? new Date(exp * 1000) : null;
}

/** A short machine code from OpenAI error bodies (`{error:{code}}`, `{error:"..."}`), never free text. */
export function errorCode(text: string): string | null {
  try {
    const body = JSON.parse(text) as Record<string, unknown>;
    const err = body.error;
    const candidates = [
      err && typeof err === 'object' ? (err as Record<string, unknown>).code : err,
      body.code,
      body.error_code,
    ];
    const found = candidates.find((c): c is string => typeof c === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(c));
    return found ?? null;
  } catch {
    return null;
  }
}

interface TokenResponse {
  access_token?: unknown;
  refresh_token?: unknown;
  id_token?: unknown;
  expires_in?: unknown;
}

/** Builds stored credentials from a token response, keeping what the response left out. */
function credentialsFrom(tokens: TokenResponse, now: Date, previous?: CodexCredentials): CodexCredentials {
  const access = str(tokens.access_token);
  if (!access) throw new SchemaDriftError('The OpenAI token response has no access_token');
  const refresh = str(tokens.refresh_token) ?? previous?.refresh_token ?? null;
  if (!refresh) throw new SchemaDriftError('The OpenAI token response has no refresh_token');
  const idToken = str(tokens.id_token) ?? previous?.id_token ?? null;
  const expiresIn = typeof tokens.expires_in === 'number' && tokens.expires_in > 0 ? tokens.expires_in : null;
  const exp = jwtClaims(access)?.exp;
  const expiresAt =
    expiresIn !== null
      ? new Date(now.getTime() + expiresIn * 1000)
      : typeof exp === 'number' && Number.isFinite(exp)
        ? new Date(exp * 1000)
        : null;
  return {
    access_token: access,
    refresh_token: refresh,
    id_token: idToken,
    // A stored account id is the workspace the user chose; keep it over the token's default.
    account_id: str(previous?.account_id) ?? accountIdFromToken(idToken) ?? accountIdFromToken(access),
    // Epoch milliseconds: a number never collides with the host's redaction of credential strings.
    expires_at: expiresAt ? expiresAt.getTime() : null,
  };
}

function scrubber(...secrets: Array<string | null | undefined>) {
  const list = secrets.filter((s): s is string => typeof s === 'string' && s.length > 0);
  return (m: string) => sanitizeMessage(m, list);
}

/**
 * Exchanges the refresh token for new tokens, as the Codex CLI does (JSON body with the client id).
 * Refresh tokens are single-use: the caller must persist the returned credentials.
 */
export async function refreshTokens(http: HttpClient, authBase: string, creds: CodexCredentials, now: Date): Promise<CodexCredentials> {
  if (!str(creds.refresh_token)) throw new AuthError('The access token expired and no refresh token is stored; sign in again');
  const res = await http.request(`${authBase}/oauth/token`, {
    method: 'POST',
    json: { client_id: CLIENT_ID, grant_type: 'refresh_token', refresh_token: creds.refresh_token },
  });
  if (res.status === 429) throw new RateLimitedError('OpenAI rate-limited the token refresh (HTTP 429)', parseRetryAfter(res.headers['retry-after'], now));
  if (res.status >= 500) throw new UpstreamError(`The OpenAI token refresh failed (HTTP ${res.status})`, res.status);
  if (res.status < 200 || res.status >= 300) {
    const code = errorCode(res.text);
    throw new AuthError(
      `OpenAI rejected the refresh token (HTTP ${res.status}${code ? `: ${code}` : ''}); sign in again`,
      res.status,
    );
  }
  return credentialsFrom(res.json<TokenResponse>(), now, creds);
}

/** The authorization-code exchange shared by both flows (form body, as the Codex CLI sends it). */
async function exchangeCode(
  ctx: OAuthContext,
  params: { code: string; redirect_uri: string; code_verifier: string },
): Promise<OAuthStepResult> {
  const res = await ctx.http.request(`${authBaseUrl(ctx.settings)}/oauth/token`, {
    method: 'POST',
    form: { grant_type: 'authorization_code', code: params.code, redirect_uri: params.redirect_uri, client_id: CLIENT_ID, code_verifier: params.code_verifier },
  });
  if (res.status < 200 || res.status >= 300) {
    const code = errorCode(res.text);
    return { status: 'error', error: `The authorization code exchange failed (HTTP ${res.status}${code ? `: ${code}` : ''})` };
  }
  try {
    return { status: 'complete', credentials: credentialsFrom(res.json<TokenResponse>(), ctx.clock.now()) };
  } catch (err) {
    return { status: 'error', error: scrubber(params.code, params.code_verifier)((err as Error).message) };
  }
}

function parseInterval(v: unknown): number | null {
  const n = typeof v === 'number' ? v : typeof v === 'string' ? Number(v.trim()) : NaN;
  return Number.isFinite(n) && n > 0 ? Math.min(Math.round(n), 60) : null;
}

function expired(ctx: OAuthContext, state: Record<string, unknown>): boolean {
  const at = typeof state.expires_at === 'string' ? Date.parse(state.expires_at) : NaN;
  return !Number.isNaN(at) && ctx.clock.now().getTime() >= at;
}

/** Classifies a device-auth poll that did not succeed. 403/404 mean "not yet" for the CLI. */
function pollOutcome(res: HttpResponse, interval: number): OAuthStepResult {
  const code = errorCode(res.text)?.toLowerCase() ?? '';
  if (/denied|declined|rejected|cancel/.test(code)) return { status: 'denied', error: 'The sign-in was denied' };
  if (/expired/.test(code)) return { status: 'expired', error: 'The device code expired' };
  if (res.status === 403 || res.status === 404) return { status: 'pending', interval_seconds: interval };
  if (res.status === 429 || code === 'slow_down') return { status: 'slow_down', interval_seconds: interval + 5 };
  // A transient server error must not end a flow the user is still completing.
  if (res.status >= 500) return { status: 'pending', interval_seconds: interval };
  return { status: 'error', error: `Device authorization failed (HTTP ${res.status}${code ? `: ${code}` : ''})` };
}

/**
 * The Codex CLI's device-code login: not RFC 8628, but ChatGPT's own `deviceauth` endpoints that hand
 * out an authorization code plus the PKCE verifier, which is then exchanged like a browser login.
 */
export const deviceFlow: OAuthDeviceFlow = {
  async start(ctx) {
    const base = authBaseUrl(ctx.settings);
    const res = await ctx.http.request(`${base}/api/accounts/deviceauth/usercode`, { method: 'POST', json: { client_id: CLIENT_ID } });
    if (res.status === 404) {
      throw new UpstreamError('Device code login is not enabled for this account (enable it in ChatGPT security settings) or server; use the browser flow', 404);
    }
    if (res.status === 429) throw new RateLimitedError('OpenAI rate-limited the device code request (HTTP 429)', parseRetryAfter(res.headers['retry-after']));
    if (res.status < 200 || res.status >= 300) throw new UpstreamError(`The device code request failed (HTTP ${res.status})`, res.status);
    const body = res.json<Record<string, unknown>>() ?? {};
    const deviceAuthId = str(body.device_auth_id);
    const userCode = str(body.user_code) ?? str(body.usercode);
    if (!deviceAuthId || !userCode) throw new SchemaDriftError('The device code response has no device_auth_id or user_code');
    const interval = parseInterval(body.interval) ?? DEFAULT_INTERVAL_S;
    const expiresAt = new Date(ctx.clock.now().getTime() + DEVICE_CODE_TTL_S * 1000);
    return {
      state: { device_auth_id: deviceAuthId, user_code: userCode, interval, expires_at: expiresAt.toISOString() },
      user_code: userCode,
      verification_uri: `${base}/codex/device`,
      verification_uri_complete: null,
      expires_in_seconds: DEVICE_CODE_TTL_S,
      interval_seconds: interval,
    };
  },

  async poll(ctx, state) {
    const interval = parseInterval(state.interval) ?? DEFAULT_INTERVAL_S;
    if (expired(ctx, state)) return { status: 'expired', error: 'The device code expired; start again' };
    const deviceAuthId = str(state.device_auth_id);
    const userCode = str(state.user_code);
    if (!deviceAuthId || !userCode) return { status: 'error', error: 'The device flow state is incomplete' };
    const base = authBaseUrl(ctx.settings);
    const res = await ctx.http.request(`${base}/api/accounts/deviceauth/token`, {
      method: 'POST',
      json: { device_auth_id: deviceAuthId, user_code: userCode },
    });
    if (res.status < 200 || res.status >= 300) return pollOutcome(res, interval);
    const body = res.json<Record<string, unknown>>() ?? {};
    const code = str(body.authorization_code);
    const verifier = str(body.code_verifier);
    if (!code || !verifier) return { status: 'error', error: 'The device authorization response has no authorization_code or code_verifier' };
    return exchangeCode(ctx, { code, code_verifier: verifier, redirect_uri: `${base}/deviceauth/callback` });
  },
};

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Reads `code`/`state`/`error` from a pasted callback: a full URL, its query, or its fragment. */
function callbackParams(callback: string): URLSearchParams | null {
  const s = callback.trim();
  if (!s) return null;
  try {
    const u = new URL(s);
    const q = u.searchParams;
    if (!q.has('code') && !q.has('error') && u.hash.length > 1) return new URLSearchParams(u.hash.slice(1));
    return q;
  } catch {
    return s.includes('=') ? new URLSearchParams(s.replace(/^[?#]/, '')) : null;
  }
}

/** Authorization code + PKCE (S256) against the loopback redirect the client allows; the user pastes the callback URL. */
export const browserFlow: OAuthBrowserFlow = {
  async start(ctx) {
    const base = authBaseUrl(ctx.settings);
    const verifier = b64url(randomBytes(64));
    const challenge = b64url(createHash('sha256').update(verifier).digest());
    const state = b64url(randomBytes(32));
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: CLIENT_ID,
      redirect_uri: BROWSER_REDIRECT_URI,
      scope: SCOPE,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      id_token_add_organizations: 'true',
      codex_cli_simplified_flow: 'true',
      state,
      originator: 'codex_cli_rs',
    });
    const expiresAt = new Date(ctx.clock.now().getTime() + BROWSER_FLOW_TTL_S * 1000);
    return {
      state: { state, code_verifier: verifier, redirect_uri: BROWSER_REDIRECT_URI, expires_at: expiresAt.toISOString() },
      authorization_url: `${base}/oauth/authorize?${query.toString().replace(/\+/g, '%20')}`,
      redirect_uri: BROWSER_REDIRECT_URI,
      expires_in_seconds: BROWSER_FLOW_TTL_S,
    };
  },

  async complete(ctx, state, callback) {
    if (expired(ctx, state)) return { status: 'expired', error: 'The sign-in took too long; start again' };
    const params = callbackParams(callback);
    if (!params) return { status: 'error', error: 'Paste the full URL the browser was redirected to (http://localhost:1455/auth/callback?code=...)' };
    const expectedState = str(state.state);
    const verifier = str(state.code_verifier);
    const redirectUri = str(state.redirect_uri) ?? BROWSER_REDIRECT_URI;
    const got = params.get('state');
    if (!expectedState || !verifier || !got || !safeEqual(got, expectedState)) {
      return { status: 'error', error: 'The callback state does not match this sign-in; start again' };
    }
    const error = params.get('error');
    if (error) {
      return error === 'access_denied'
        ? { status: 'denied', error: 'The sign-in was denied' }
        : { status: 'error', error: `The sign-in failed: ${/^[A-Za-z0-9_.-]{1,64}$/.test(error) ? error : 'unknown error'}` };
    }
    const code = params.get('code');
    if (!code) return { status: 'error', error: 'The callback URL has no authorization code' };
    return exchangeCode(ctx, { code, code_verifier: verifier, redirect_uri: redirectUri });
  },
};
