/**
 * A small, correct provider plugin ("acme") and its testcases, written to a temporary folder. The
 * kit self-tests break it in one way at a time and check that the kit notices.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { defineProvider, SchemaDriftError, type PluginContext, type ProviderPlugin, type ProviderUsage } from '../../src/index.js';

export const API_KEY = 'acme-test-key-0123456789abcdef';
export const OTHER_KEY = 'acme-test-key-unlimited-fedcba9876';

export interface AcmeCredentials {
  api_key: string;
}

export interface AcmeData {
  used?: number | null;
  limit?: number | null;
  resets_at?: string | null;
}

export const acmeMetrics = {
  Used: { type: 'counter', unit: 'USD', direction: 'increasing', window: '30d', headline: true, reset_metric: 'Resets at' },
  Limit: { type: 'gauge', unit: 'USD', direction: 'increasing' },
  'Resets at': { type: 'gauge', unit: 'datetime', direction: 'increasing' },
} as const;

type Fetch = (ctx: PluginContext<AcmeCredentials>) => Promise<ProviderUsage>;

/** Reads `GET /usage` and classifies everything through `ctx.http.getJson`. */
export async function readUsage(ctx: PluginContext<AcmeCredentials>): Promise<AcmeData> {
  const body = await ctx.http.getJson<{ data?: AcmeData }>(`${ctx.baseUrl}/usage`, {
    headers: { authorization: `Bearer ${ctx.credentials.api_key}` },
  });
  const data = body?.data;
  if (!data || typeof data !== 'object' || !('used' in data)) throw new SchemaDriftError('acme /usage has no data.used');
  return data;
}

export function toUsage(d: AcmeData): ProviderUsage {
  const used = typeof d.used === 'number' ? d.used : null;
  const limit = typeof d.limit === 'number' ? d.limit : null;
  return {
    status: 'healthy',
    summary: used === null ? 'usage unknown' : `$${used.toFixed(2)} used`,
    metrics: [
      { label: 'Used', value: used, unit: 'USD', maximum: limit },
      { label: 'Limit', value: limit, unit: 'USD', maximum: null },
      { label: 'Resets at', value: d.resets_at ?? null, unit: 'datetime', maximum: null },
    ],
    raw: { data: d },
  };
}

export const goodFetch: Fetch = async (ctx) => toUsage(await readUsage(ctx));

/** The acme plugin, with `fetchUsage` (and anything else) replaced. */
export function acme(overrides: Partial<ProviderPlugin<AcmeCredentials>> & { fetchUsage?: Fetch } = {}): ProviderPlugin<AcmeCredentials> {
  return defineProvider<AcmeCredentials>({
    apiVersion: 1,
    id: 'acme',
    name: 'Acme',
    description: 'A made-up provider for the kit self-tests.',
    defaultBaseUrl: 'https://api.acme.example/v1',
    auth: { kind: 'api_key' },
    credentials: {
      type: 'object',
      additionalProperties: false,
      required: ['api_key'],
      properties: { api_key: { type: 'string', minLength: 8, writeOnly: true } },
    },
    settings: { type: 'object', additionalProperties: false, properties: {} },
    metrics: acmeMetrics,
    fetchUsage: goodFetch,
    ...overrides,
  });
}

export type Files = Record<string, unknown>;

/** Writes `{ "case/file.json": value }` under a new temporary folder and returns its path. */
export function writeCases(files: Files): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'um-kit-'));
  for (const [rel, value] of Object.entries(files)) {
    const file = path.join(root, rel);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, typeof value === 'string' ? value : JSON.stringify(value, null, 2));
  }
  return root;
}

export function removeCases(dir: string): void {
  fs.rmSync(dir, { recursive: true, force: true });
}

const usageRequest = (key: string) => ({ method: 'GET', path: '/usage', headers: { authorization: `Bearer ${key}` } });

/** The acme testcases: a healthy case, an unlimited case (nulls) and a 401. */
export function acmeCases(): Files {
  return {
    'healthy/case.json': { description: 'a limited key', now: '2026-11-20T12:00:00Z' },
    'healthy/credentials.json': { api_key: API_KEY },
    'healthy/responses/01-usage.json': {
      request: usageRequest(API_KEY),
      response: { status: 200, body: { data: { used: 12.5, limit: 100, resets_at: '2026-12-01T00:00:00Z' } } },
    },
    'healthy/expected.json': {
      status: 'healthy',
      summary: '$12.50 used',
      metrics: [
        { label: 'Used', value: 12.5, unit: 'USD', maximum: 100 },
        { label: 'Limit', value: 100, unit: 'USD', maximum: null },
        { label: 'Resets at', value: '2026-12-01T00:00:00Z', unit: 'datetime', maximum: null },
      ],
    },
    'unlimited/credentials.json': { api_key: OTHER_KEY },
    'unlimited/responses/01-usage.json': {
      request: usageRequest(OTHER_KEY),
      response: { status: 200, body: { data: { used: 3, limit: null, resets_at: null } } },
    },
    'unlimited/expected.json': {
      status: 'healthy',
      metrics: [
        { label: 'Used', value: 3, unit: 'USD', maximum: null },
        { label: 'Limit', value: null, unit: 'USD', maximum: null },
        { label: 'Resets at', value: null, unit: 'datetime', maximum: null },
      ],
    },
    'unauthorized/credentials.json': { api_key: API_KEY },
    'unauthorized/responses/01-usage.json': {
      request: usageRequest(API_KEY),
      response: { status: 401, body: { error: { message: 'invalid api key' } } },
    },
    'unauthorized/expected-error.json': { code: 'auth_error', message_includes: 'invalid api key' },
  };
}
