import type { Metric, ThresholdRule, UsageSnapshot } from '@usage-monitor/core';

/** Typed client for the usage-monitor REST API (API.md). Works in Node 20+ and browsers. */

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  errors?: Array<{ path: string; message: string }>;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly problem: Problem | null,
  ) {
    super(problem ? `${problem.status} ${problem.code}: ${problem.detail}` : `HTTP ${status}`);
    this.name = 'ApiError';
  }
}

export interface Session {
  access_token: string;
  token_type: 'bearer';
  expires_at: string;
}

export type Scope = 'configs:read' | 'history:read' | 'poll:write' | 'usage:read' | 'analytics:read' | 'datasources:read';

export interface TokenRecord {
  id: number;
  token_id: number;
  name: string;
  token_prefix: string;
  scopes: Scope[];
  state: 'active' | 'revoked' | 'expired';
  expires_at: string | null;
  revoked_at: string | null;
  last_used_at: string | null;
  created_at: string;
}

export interface Connection {
  id: number;
  provider: string;
  label: string;
  base_url: string | null;
  extra: Record<string, unknown>;
  is_enabled: boolean;
  is_visible: boolean;
  display_order: number;
  alert_thresholds: ThresholdRule[];
  created_at: string;
  updated_at: string;
  api_key_masked: string;
  available: boolean;
}

export interface ConnectionInput {
  provider: string;
  label?: string | null;
  api_key?: string;
  credentials?: Record<string, unknown>;
  base_url?: string | null;
  extra?: Record<string, unknown>;
  is_enabled?: boolean;
  is_visible?: boolean;
  display_order?: number;
  alert_thresholds?: ThresholdRule[];
}

export interface TestResult {
  status: 'healthy' | 'degraded';
  summary: string;
  metrics: Metric[];
  raw: unknown;
}

export type { Metric, ThresholdRule, UsageSnapshot };

export interface ClientOptions {
  /** The server's base URL, e.g. `http://localhost:8080` (the `/api/v1` prefix is added). */
  baseUrl: string;
  /** An admin session token or a `udt_` API token. */
  token?: string;
  fetch?: typeof fetch;
}

export class UsageMonitorClient {
  private readonly base: string;
  private readonly doFetch: typeof fetch;
  token: string | undefined;

  constructor(opts: ClientOptions) {
    this.base = `${opts.baseUrl.replace(/\/+$/, '')}/api/v1`;
    this.token = opts.token;
    this.doFetch = opts.fetch ?? fetch;
  }

  async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await this.doFetch(`${this.base}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    if (res.status === 204 || res.status === 202) return undefined as T;
    const text = await res.text();
    const data = text ? (JSON.parse(text) as unknown) : undefined;
    if (!res.ok) throw new ApiError(res.status, (data as Problem | undefined) ?? null);
    return data as T;
  }

  authStatus() {
    return this.request<{ is_configured: boolean; setup_required: boolean }>('GET', '/auth/status');
  }
  async setup(code: string, password: string) {
    const s = await this.request<Session>('POST', '/auth/setup', { code, password });
    this.token = s.access_token;
    return s;
  }
  async login(password: string) {
    const s = await this.request<Session>('POST', '/auth/login', { password });
    this.token = s.access_token;
    return s;
  }
  logout() {
    return this.request<void>('POST', '/auth/logout');
  }
  listTokens() {
    return this.request<TokenRecord[]>('GET', '/api-tokens');
  }
  createToken(input: { name: string; scopes: Scope[]; expires_at?: string | null }) {
    return this.request<TokenRecord & { token: string }>('POST', '/api-tokens', input);
  }
  revokeToken(id: number) {
    return this.request<void>('POST', `/api-tokens/${id}/revoke`);
  }
  listProviders() {
    return this.request<Array<Record<string, unknown> & { id: string; name: string }>>('GET', '/providers');
  }
  listConnections() {
    return this.request<Connection[]>('GET', '/configs');
  }
  createConnection(input: ConnectionInput) {
    return this.request<Connection>('POST', '/configs', input);
  }
  updateConnection(id: number, patch: Partial<Omit<ConnectionInput, 'provider'>>) {
    return this.request<Connection>('PATCH', `/configs/${id}`, patch);
  }
  deleteConnection(id: number) {
    return this.request<void>('DELETE', `/configs/${id}`);
  }
  reorderConnections(ids: number[]) {
    return this.request<Connection[]>('PATCH', '/configs/order', { config_ids: ids });
  }
  testConnection(input: ConnectionInput) {
    return this.request<TestResult>('POST', '/configs/test', input);
  }
}
