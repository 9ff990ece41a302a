import { AuthError, UsageMonitorError, sanitizeMessage } from '../errors.js';
import type { Metric } from '../domain/metrics.js';
import type { MetricSpec, MetricWindow } from './metric-spec.js';
import type { JsonSchema, ProviderUsage } from './provider.js';

// Small building blocks that several provider plugins share. Each returns exactly what the plugins
// used to spell out by hand, so a descriptor built with them is the same as one written in full.

/** Options of {@link apiKeyCredentials}. */
export interface ApiKeyCredentialsOptions {
  /** The form label of the key (default `API key`). */
  title?: string;
  /** Default 8. */
  minLength?: number;
  /** Default 500. */
  maxLength?: number;
  /** Further credential properties, after `api_key` and not required (e.g. an optional second key). */
  optionalProperties?: Record<string, JsonSchema>;
}

/**
 * The credentials schema of a plugin that needs one API key:
 * `{ type: 'object', additionalProperties: false, required: ['api_key'], properties: { api_key } }`,
 * where `api_key` is a write-only string of 8 to 500 characters titled `API key`.
 * `description` tells the user which key to paste; without it the property has no description.
 */
export function apiKeyCredentials(description?: string, options: ApiKeyCredentialsOptions = {}): JsonSchema {
  const { title = 'API key', minLength = 8, maxLength = 500, optionalProperties = {} } = options;
  return {
    type: 'object',
    additionalProperties: false,
    required: ['api_key'],
    properties: {
      api_key: { type: 'string', minLength, maxLength, writeOnly: true, title, ...(description === undefined ? {} : { description }) },
      ...optionalProperties,
    },
  };
}

/** The settings schema of a plugin without settings: an object that allows no properties. Frozen: it is shared. */
export const NO_SETTINGS: Readonly<JsonSchema> = Object.freeze({
  type: 'object',
  additionalProperties: false,
  properties: Object.freeze({}),
});

/**
 * A `percent_used` metric (unit `percent`, 0 to 100, `maximum: 100`) over `window`, whose reset time is
 * the `datetime` metric labelled `resetMetric` (null when none is reported). `extra` adds or overrides
 * fields, e.g. `{ headline: true, utilization: true }`.
 */
export function percentUsedSpec(window: MetricWindow, resetMetric: string | null, description: string, extra: Partial<MetricSpec> = {}): MetricSpec {
  return { type: 'percent_used', unit: 'percent', direction: 'increasing', window, reset_metric: resetMetric, maximum: 100, description, ...extra };
}

/** A point in time as a metric (a `gauge` with unit `datetime`): a window's reset, a period's start or end. */
export function datetimeSpec(description: string): MetricSpec {
  return { type: 'gauge', unit: 'datetime', direction: 'increasing', description };
}

/** Every declared metric with value null, its unit and fixed maximum from the spec: a result that read nothing. */
export function nullMetrics(specs: Record<string, MetricSpec>): Metric[] {
  return Object.entries(specs).map(([label, spec]) => ({ label, value: null, unit: spec.unit, maximum: spec.maximum ?? null }));
}

/**
 * For plugins whose refresh tokens rotate (a refresh spends the old one): the result of a poll that
 * refreshed the tokens and whose usage request then failed with `err`. The new tokens must still be
 * stored, so it is a degraded result with every metric null, the error's code in `raw` and the rotated
 * `credentials`; the message is cleaned of the new access and refresh token. An AuthError is rethrown:
 * the new tokens were refused too, and only a new sign-in helps.
 */
export function refreshedButFailed(
  err: unknown,
  rotated: Record<string, unknown> & { access_token: string; refresh_token: string },
  specs: Record<string, MetricSpec>,
): ProviderUsage {
  if (err instanceof AuthError) throw err;
  const code = err instanceof UsageMonitorError ? err.code : 'upstream_error';
  const message = sanitizeMessage(err instanceof Error ? err.message : String(err), [rotated.access_token, rotated.refresh_token]);
  return {
    status: 'degraded',
    summary: `Token refreshed, but the usage request failed: ${message}`,
    metrics: nullMetrics(specs),
    raw: { error: code },
    credentials: rotated,
  };
}

/**
 * The `region` settings property of a plugin with one host per region: one of the keys of `hosts`,
 * the first by default (see {@link regionBaseUrl}).
 */
export function regionSetting(hosts: Readonly<Record<string, string>>, description: string): JsonSchema {
  const regions = Object.keys(hosts);
  return { enum: regions, default: regions[0], title: 'Region', description };
}

/**
 * The base URL to call for a connection of a plugin with one host per region. `hosts` maps each region to
 * its base URL; its first entry is the default region, whose URL is the plugin's `defaultBaseUrl`. While the
 * connection uses that default URL, the region setting picks the host; a base URL the connection sets
 * itself always wins, and an unknown or absent region keeps `baseUrl`.
 */
export function regionBaseUrl(baseUrl: string, region: string | null | undefined, hosts: Readonly<Record<string, string>>): string {
  const defaultUrl = Object.values(hosts)[0];
  return baseUrl === defaultUrl && typeof region === 'string' && Object.hasOwn(hosts, region) ? hosts[region]! : baseUrl;
}

/** `v` when it is a finite number, else null: a missing or malformed upstream value is never 0. */
export function finiteNumber(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

/**
 * A finite number from a number or a numeric string (APIs that send amounts as decimal strings);
 * anything else (null, a blank or non-numeric string, NaN, Infinity, an object) is null.
 */
export function parseNumber(v: unknown): number | null {
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
  return typeof n === 'number' && Number.isFinite(n) ? n : null;
}

/** A sum that stays unknown (null) when any part is unknown; an empty list is a real 0. Rounded to 6 decimals. */
export function sumOrNull(values: ReadonlyArray<number | null>): number | null {
  return values.some((v) => v === null) ? null : Math.round((values as number[]).reduce((a, b) => a + b, 0) * 1e6) / 1e6;
}

/** Whether `v` is a non-null object that is not an array (a JSON object, once parsed). */
export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
