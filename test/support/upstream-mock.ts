/**
 * Upstream mock: a real HTTP server on 127.0.0.1 that stands in for the providers in API tests and
 * benchmarks. Replies are provider-shaped (helpers at the bottom build the real response shapes from
 * /work/shared/reference/provider-apis.md with made-up values) and every route has knobs: status,
 * headers (e.g. 429 + Retry-After), JSON or raw text (malformed JSON), delay, hang until close, a huge
 * streamed body, a dropped connection. A reply can be set per route, as a sequence, per credential
 * (so 1000 connections with distinct keys can share one mock) or computed by a function.
 *
 *   const mock = await startUpstreamMock();
 *   mock.route('GET', '/key', { body: openrouterKey({ usage_monthly: 12.5 }) });
 *   mock.forKey('sk-or-v1-other-key-0001', 'GET', '/key', { status: 401, body: openrouterError(401) });
 *   // connection base_url = mock.url (paths are whatever the plugin appends to its base URL)
 *   await mock.close();
 *
 * Reply selection for a request: the credential's reply (forKey) if any, else the route's reply
 * (route / sequence), else the fallback (default: 404 JSON naming the unmatched route).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface MockReply {
  /** HTTP status, default 200. */
  status?: number;
  /** A JSON body (sent with content-type application/json). */
  body?: unknown;
  /** A raw body instead of JSON: malformed JSON, HTML error pages. Content-type text/plain unless set in headers. */
  bodyText?: string;
  /** A huge body: a valid JSON document `{"padding":"xxx..."}` of exactly this many bytes, streamed. */
  bodyBytes?: number;
  /** With `bodyBytes`: send it chunked, without content-length (a client must count, not trust the header). */
  chunked?: boolean;
  headers?: Record<string, string | string[]>;
  /** Wait this long before answering (added to the mock's latency). */
  delayMs?: number;
  /** Never answer; the connection is dropped when the mock closes or the client gives up. */
  hang?: boolean;
  /** Drop the connection without any response. */
  destroy?: boolean;
}

export interface RecordedRequest {
  method: string;
  /** The path without the query string. */
  path: string;
  /** Query parameters; a repeated key keeps its first value (see `url` for all of them). */
  query: Record<string, string>;
  /** Path and query string as received. */
  url: string;
  /** Lower-case header names, as node parses them. */
  headers: http.IncomingHttpHeaders;
  /** The body parsed as JSON when it is JSON, else the raw text; null when empty. */
  body: unknown;
  bodyText: string;
  /** The credential the request carried (Bearer token, x-api-key, or `api_key` query), or null. */
  key: string | null;
  /** Date.now() when the request arrived. */
  at: number;
}

export type MockHandler = (req: RecordedRequest) => MockReply | Promise<MockReply>;
export type MockResponder = MockReply | MockHandler;

export interface UpstreamMockOptions {
  /** Added before every reply. Default 0. */
  latencyMs?: number;
  /** Keep every request for `requests()`. Default true; benchmarks may turn it off (counts are always kept). */
  record?: boolean;
}

export interface UpstreamMockStats {
  total: number;
  inFlight: number;
  maxInFlight: number;
}

export interface UpstreamMock {
  /** `http://127.0.0.1:PORT`, no trailing slash. */
  readonly url: string;
  readonly port: number;
  /** Set the reply of a route (replaces any sequence on it). */
  route(method: string, path: string, reply: MockResponder): UpstreamMock;
  /** Successive replies for a route; the last one repeats. */
  sequence(method: string, path: string, replies: MockResponder[]): UpstreamMock;
  /** A reply (or, given an array, a sequence) for requests carrying this credential. */
  forKey(key: string, method: string, path: string, reply: MockResponder | MockResponder[]): UpstreamMock;
  /** The reply for requests no route matches. Default: 404 JSON. */
  fallback(reply: MockResponder): UpstreamMock;
  /** Change the latency added before every reply. */
  setLatency(ms: number): UpstreamMock;
  /** Recorded requests, optionally filtered by method and path (and credential). */
  requests(method?: string, path?: string, key?: string): RecordedRequest[];
  /** How many requests arrived, optionally filtered by method and path (kept even with record: false). */
  count(method?: string, path?: string): number;
  stats(): UpstreamMockStats;
  /** Forget recorded requests and counts; keep the routes. */
  clearRequests(): void;
  /** Back to a fresh mock: no routes, no per-key replies, default fallback, nothing recorded. */
  reset(): void;
  /** Stop the server. Hanging and delayed requests are dropped; never waits for them. */
  close(): Promise<void>;
}

const NOT_FOUND: MockHandler = (req) => ({
  status: 404,
  body: { error: { message: `upstream mock: no route for ${req.method} ${req.path}` } },
});

const MAX_RECORDED_BODY = 1 << 20;

class ReplyQueue {
  private next = 0;
  constructor(private readonly replies: MockResponder[]) {
    if (replies.length === 0) throw new Error('upstream mock: a sequence needs at least one reply');
  }
  take(): MockResponder {
    const r = this.replies[Math.min(this.next, this.replies.length - 1)]!;
    this.next += 1;
    return r;
  }
}

const routeKey = (method: string, path: string) => `${method.toUpperCase()} ${path}`;

/** The credential a request carries: `Authorization: Bearer X` (or the raw header), `x-api-key`, `api_key` query. */
export function credentialOf(headers: http.IncomingHttpHeaders, query: Record<string, string>): string | null {
  const auth = headers.authorization;
  if (typeof auth === 'string' && auth.length > 0) {
    const m = /^Bearer\s+(.+)$/i.exec(auth.trim());
    return m ? m[1]!.trim() : auth.trim();
  }
  const apiKey = headers['x-api-key'];
  if (typeof apiKey === 'string' && apiKey.length > 0) return apiKey;
  return query.api_key ?? null;
}

export async function startUpstreamMock(options: UpstreamMockOptions = {}): Promise<UpstreamMock> {
  let latencyMs = options.latencyMs ?? 0;
  const record = options.record ?? true;
  const routes = new Map<string, ReplyQueue>();
  const keyed = new Map<string, ReplyQueue>();
  let fallback: MockResponder = NOT_FOUND;
  let recorded: RecordedRequest[] = [];
  let counts = new Map<string, number>();
  let total = 0;
  let inFlight = 0;
  let maxInFlight = 0;
  let closing = false;
  /** Responses not finished yet (delayed, hanging, streaming): dropped on close. */
  const pending = new Set<http.ServerResponse>();
  /** Pending delays, each with the function that cancels it (clears the timer, resolves false). */
  const delays = new Set<() => void>();

  /** Resolves true after `ms`, or false as soon as the client leaves or the mock closes. */
  const wait = (ms: number, res: http.ServerResponse) =>
    new Promise<boolean>((resolve) => {
      if (ms <= 0) return resolve(!res.destroyed && !closing);
      const finish = (ok: boolean) => {
        clearTimeout(t);
        delays.delete(cancel);
        res.off('close', cancel);
        resolve(ok);
      };
      const cancel = () => finish(false);
      const t = setTimeout(() => finish(!res.destroyed && !closing), ms);
      delays.add(cancel);
      res.once('close', cancel);
    });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const u = new URL(req.url ?? '/', 'http://mock.invalid');
    const query: Record<string, string> = {};
    for (const [k, v] of u.searchParams) if (!(k in query)) query[k] = v;
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size <= MAX_RECORDED_BODY) chunks.push(chunk);
    }
    const bodyText = Buffer.concat(chunks).toString('utf8');
    let body: unknown = null;
    if (bodyText.length > 0) {
      try {
        body = JSON.parse(bodyText);
      } catch {
        body = bodyText;
      }
    }
    const method = (req.method ?? 'GET').toUpperCase();
    const entry: RecordedRequest = {
      method,
      path: u.pathname,
      query,
      url: req.url ?? '/',
      headers: req.headers,
      body,
      bodyText,
      key: credentialOf(req.headers, query),
      at: Date.now(),
    };
    const rk = routeKey(method, u.pathname);
    total += 1;
    counts.set(rk, (counts.get(rk) ?? 0) + 1);
    if (record) recorded.push(entry);

    const queue = (entry.key !== null ? keyed.get(`${entry.key}\n${rk}`) : undefined) ?? routes.get(rk);
    const responder = queue ? queue.take() : fallback;
    const reply = typeof responder === 'function' ? await responder(entry) : responder;
    await send(reply, res);
  }

  async function send(reply: MockReply, res: http.ServerResponse): Promise<void> {
    if (!(await wait(latencyMs + (reply.delayMs ?? 0), res))) return void res.destroy();
    if (reply.destroy) return void res.socket?.destroy();
    if (reply.hang) return; // stays in `pending` until the client leaves or the mock closes

    const headers: Record<string, string | string[]> = {};
    let payload: string | null = null;
    if (reply.bodyText !== undefined) {
      payload = reply.bodyText;
      headers['content-type'] = 'text/plain; charset=utf-8';
    } else if (reply.bodyBytes !== undefined) {
      headers['content-type'] = 'application/json';
    } else if (reply.body !== undefined) {
      payload = JSON.stringify(reply.body);
      headers['content-type'] = 'application/json';
    }
    const bytes = reply.bodyBytes !== undefined ? Math.max(reply.bodyBytes, HUGE_OVERHEAD) : null;
    if (payload !== null) headers['content-length'] = String(Buffer.byteLength(payload));
    else if (bytes !== null && !reply.chunked) headers['content-length'] = String(bytes);
    else if (bytes === null) headers['content-length'] = '0';
    for (const [name, value] of Object.entries(reply.headers ?? {})) {
      for (const existing of Object.keys(headers)) if (existing.toLowerCase() === name.toLowerCase()) delete headers[existing];
      headers[name] = value;
    }
    res.writeHead(reply.status ?? 200, headers);
    if (bytes !== null) return streamHuge(res, bytes);
    res.end(payload ?? undefined);
  }

  const server = http.createServer({ keepAlive: true }, (req, res) => {
    inFlight += 1;
    maxInFlight = Math.max(maxInFlight, inFlight);
    pending.add(res);
    res.once('close', () => {
      inFlight -= 1;
      pending.delete(res);
    });
    if (closing) return void res.destroy();
    handle(req, res).catch((err: unknown) => {
      if (res.headersSent) return void res.destroy();
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `upstream mock failed: ${String(err)}` } }));
    });
  });
  // Benchmarks open 1000+ connections with keep-alive; nothing here may cap or time them out.
  server.maxConnections = Number.POSITIVE_INFINITY;
  server.requestTimeout = 0; // a `hang` lasts until close, not 300 s
  server.keepAliveTimeout = 60_000;
  server.headersTimeout = 65_000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port: 0, backlog: 4096 }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;

  const mock: UpstreamMock = {
    url: `http://127.0.0.1:${port}`,
    port,
    route(method, path, reply) {
      routes.set(routeKey(method, path), new ReplyQueue([reply]));
      return mock;
    },
    sequence(method, path, replies) {
      routes.set(routeKey(method, path), new ReplyQueue([...replies]));
      return mock;
    },
    forKey(key, method, path, reply) {
      keyed.set(`${key}\n${routeKey(method, path)}`, new ReplyQueue(Array.isArray(reply) ? [...reply] : [reply]));
      return mock;
    },
    fallback(reply) {
      fallback = reply;
      return mock;
    },
    setLatency(ms) {
      latencyMs = ms;
      return mock;
    },
    requests(method, path, key) {
      return recorded.filter(
        (r) =>
          (method === undefined || r.method === method.toUpperCase()) &&
          (path === undefined || r.path === path) &&
          (key === undefined || r.key === key),
      );
    },
    count(method, path) {
      if (method === undefined && path === undefined) return total;
      let n = 0;
      for (const [rk, c] of counts) {
        const sp = rk.indexOf(' ');
        if ((method === undefined || rk.slice(0, sp) === method.toUpperCase()) && (path === undefined || rk.slice(sp + 1) === path)) n += c;
      }
      return n;
    },
    stats: () => ({ total, inFlight, maxInFlight }),
    clearRequests() {
      recorded = [];
      counts = new Map();
      total = 0;
      maxInFlight = inFlight;
    },
    reset() {
      routes.clear();
      keyed.clear();
      fallback = NOT_FOUND;
      mock.clearRequests();
    },
    async close() {
      if (closing) return;
      closing = true;
      for (const cancel of [...delays]) cancel();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const res of pending) res.destroy();
      server.closeAllConnections();
      await closed;
    },
  };
  return mock;
}

const HUGE_HEAD = '{"padding":"';
const HUGE_TAIL = '"}';
const HUGE_OVERHEAD = HUGE_HEAD.length + HUGE_TAIL.length;
const HUGE_CHUNK = Buffer.alloc(64 * 1024, 'x');

function streamHuge(res: http.ServerResponse, bytes: number): void {
  let left = bytes - HUGE_OVERHEAD;
  res.write(HUGE_HEAD);
  const pump = () => {
    while (left > 0) {
      if (res.destroyed) return;
      const n = Math.min(left, HUGE_CHUNK.length);
      left -= n;
      if (!res.write(n === HUGE_CHUNK.length ? HUGE_CHUNK : HUGE_CHUNK.subarray(0, n))) {
        res.once('drain', pump);
        return;
      }
    }
    res.end(HUGE_TAIL);
  };
  pump();
}

// ---------------------------------------------------------------------------------------------------------
// Provider-shaped bodies (real field names and encodings, made-up values). Each helper documents the real
// endpoint; the mock path is whatever the plugin appends to the base URL it is given.
// ---------------------------------------------------------------------------------------------------------

export interface OpenRouterKeyData {
  label: string;
  limit: number | null;
  limit_remaining: number | null;
  limit_reset: string | null;
  include_byok_in_limit: boolean;
  usage: number | null;
  usage_daily: number | null;
  usage_weekly: number | null;
  usage_monthly: number | null;
  byok_usage: number;
  byok_usage_daily: number;
  byok_usage_weekly: number;
  byok_usage_monthly: number;
  is_free_tier: boolean;
  is_management_key: boolean;
  is_provisioning_key: boolean;
  creator_user_id: string;
  expires_at: string | null;
  rate_limit: { requests: number; interval: string; note: string };
}

/** OpenRouter `GET /api/v1/key` -> `{ data }`. Pass `limit: null, limit_remaining: null, limit_reset: null` for an unlimited key. */
export function openrouterKey(over: Partial<OpenRouterKeyData> = {}): { data: OpenRouterKeyData } {
  return {
    data: {
      label: 'sk-or-v1-3fa...c21',
      limit: 50,
      limit_remaining: 38.42,
      limit_reset: 'monthly',
      include_byok_in_limit: false,
      usage: 211.58,
      usage_daily: 0.87,
      usage_weekly: 4.1,
      usage_monthly: 11.58,
      byok_usage: 0,
      byok_usage_daily: 0,
      byok_usage_weekly: 0,
      byok_usage_monthly: 0,
      is_free_tier: false,
      is_management_key: false,
      is_provisioning_key: false,
      creator_user_id: 'user_2xFakeCreator000000000000',
      expires_at: null,
      rate_limit: { requests: -1, interval: '10s', note: 'This field is deprecated and safe to ignore.' },
      ...over,
    },
  };
}

/** OpenRouter `GET /api/v1/credits` (management key) -> `{ data: { total_credits, total_usage } }`. */
export function openrouterCredits(over: Partial<{ total_credits: number; total_usage: number }> = {}) {
  return { data: { total_credits: 120.0, total_usage: 84.3125, ...over } };
}

/** OpenRouter error envelope, e.g. 401 `{"error":{"code":401,"message":"User not found."}}`. */
export function openrouterError(code = 401, message = 'User not found.') {
  return { error: { code, message } };
}

/** OpenAI-style error envelope (OpenAI, DeepSeek). */
export function openaiError(message = 'Incorrect API key provided: sk-admin-****abcd.', code: string | null = 'invalid_api_key', type = 'invalid_request_error') {
  return { error: { message, type, param: null, code } };
}

export interface OpenAiPage<R> {
  object: 'page';
  data: OpenAiBucket<R>[];
  has_more: boolean;
  next_page: string | null;
}
export interface OpenAiBucket<R> {
  object: 'bucket';
  start_time: number;
  end_time: number;
  results: R[];
}
export interface OpenAiCostResult {
  object: 'organization.costs.result';
  /** `value` is a number or, as seen live, a decimal string. */
  amount: { value: number | string; currency: string };
  line_item: string | null;
  project_id: string | null;
}
export interface OpenAiCompletionsResult {
  object: 'organization.usage.completions.result';
  input_tokens: number;
  output_tokens: number;
  input_cached_tokens: number;
  input_audio_tokens: number;
  output_audio_tokens: number;
  num_model_requests: number;
  project_id: string | null;
  user_id: string | null;
  api_key_id: string | null;
  model: string | null;
  batch: boolean | null;
}

/** One OpenAI page (`GET /v1/organization/costs` and `/v1/organization/usage/*`). */
export function openaiPage<R>(data: OpenAiBucket<R>[], over: { has_more?: boolean; next_page?: string | null } = {}): OpenAiPage<R> {
  return { object: 'page', data, has_more: over.has_more ?? false, next_page: over.next_page ?? null };
}

/** One bucket; times are unix seconds. */
export function openaiBucket<R>(start_time: number, end_time: number, results: R[]): OpenAiBucket<R> {
  return { object: 'bucket', start_time, end_time, results };
}

export function openaiCostResult(value: number | string, over: Partial<Omit<OpenAiCostResult, 'object' | 'amount'>> & { currency?: string } = {}): OpenAiCostResult {
  return {
    object: 'organization.costs.result',
    amount: { value, currency: over.currency ?? 'usd' },
    line_item: over.line_item ?? null,
    project_id: over.project_id ?? null,
  };
}

export function openaiCompletionsResult(over: Partial<Omit<OpenAiCompletionsResult, 'object'>> = {}): OpenAiCompletionsResult {
  return {
    object: 'organization.usage.completions.result',
    input_tokens: 184220,
    output_tokens: 40318,
    input_cached_tokens: 120000,
    input_audio_tokens: 0,
    output_audio_tokens: 0,
    num_model_requests: 212,
    project_id: null,
    user_id: null,
    api_key_id: null,
    model: null,
    batch: null,
    ...over,
  };
}

/**
 * OpenAI `GET /v1/organization/costs` page of daily buckets from `start` (unix s): `days[i]` lists the cost
 * results of day i (numbers or decimal strings).
 */
export function openaiDailyCosts(start: number, days: Array<Array<number | string>>, over: { has_more?: boolean; next_page?: string | null } = {}) {
  return openaiPage(
    days.map((values, i) => openaiBucket(start + i * 86_400, start + (i + 1) * 86_400, values.map((v) => openaiCostResult(v)))),
    over,
  );
}

export interface DeepSeekBalanceInfo {
  currency: string;
  total_balance: string;
  granted_balance: string;
  topped_up_balance: string;
}

/** One DeepSeek balance entry; amounts are decimal strings and total = granted + topped_up. */
export function deepseekBalanceInfo(currency = 'USD', total = '23.87', granted = '0.00'): DeepSeekBalanceInfo {
  const topped = (Math.round((Number(total) - Number(granted)) * 100) / 100).toFixed(2);
  return { currency, total_balance: total, granted_balance: granted, topped_up_balance: topped };
}

/** DeepSeek `GET /user/balance`. */
export function deepseekBalance(over: Partial<{ is_available: boolean; balance_infos: DeepSeekBalanceInfo[] }> = {}) {
  return { is_available: true, balance_infos: [deepseekBalanceInfo()], ...over };
}

export interface CodexWindow {
  used_percent: number;
  limit_window_seconds: number;
  reset_after_seconds: number;
  /** unix seconds */
  reset_at: number;
}
export interface CodexRateLimit {
  allowed: boolean;
  limit_reached: boolean;
  primary_window: CodexWindow | null;
  secondary_window: CodexWindow | null;
}

/** Made-up "now" (unix s) the Codex defaults are relative to. */
export const CODEX_NOW = 1787990000;

/** A `wham/usage` window; `reset_at` defaults to `now + reset_after_seconds` (unix seconds, as the real API sends). */
export function codexWindow(over: Partial<CodexWindow> & { now?: number } = {}): CodexWindow {
  const limit_window_seconds = over.limit_window_seconds ?? 18_000;
  const reset_after_seconds = over.reset_after_seconds ?? Math.round(limit_window_seconds / 2);
  return {
    used_percent: over.used_percent ?? 27,
    limit_window_seconds,
    reset_after_seconds,
    reset_at: over.reset_at ?? (over.now ?? CODEX_NOW) + reset_after_seconds,
  };
}

export function codexRateLimit(primary: CodexWindow | null, secondary: CodexWindow | null = null, over: Partial<Pick<CodexRateLimit, 'allowed' | 'limit_reached'>> = {}): CodexRateLimit {
  return { allowed: true, limit_reached: false, primary_window: primary, secondary_window: secondary, ...over };
}

/** ChatGPT `GET /backend-api/wham/usage` for a Plus plan (5 h primary, weekly secondary); override any field. */
export function codexUsage(over: Record<string, unknown> = {}) {
  return {
    plan_type: 'plus',
    rate_limit: codexRateLimit(
      codexWindow({ used_percent: 27, limit_window_seconds: 18_000, reset_after_seconds: 9_840 }),
      codexWindow({ used_percent: 61, limit_window_seconds: 604_800, reset_after_seconds: 412_000 }),
    ),
    code_review_rate_limit: codexRateLimit(codexWindow({ used_percent: 4, limit_window_seconds: 604_800, reset_after_seconds: 412_000 })),
    credits: { has_credits: true, unlimited: false, balance: '118.5', approx_local_messages: [20, 110], approx_cloud_messages: [8, 45] },
    rate_limit_reset_credits: { available_count: 1 },
    ...over,
  };
}

/** ChatGPT `wham/usage` for a Free plan: only a weekly window, in `primary_window`. */
export function codexUsageFree(over: Record<string, unknown> = {}) {
  return {
    plan_type: 'free',
    rate_limit: codexRateLimit(codexWindow({ used_percent: 12, limit_window_seconds: 604_800, reset_after_seconds: 500_000 })),
    code_review_rate_limit: null,
    credits: { has_credits: false, unlimited: false, balance: '0' },
    ...over,
  };
}
