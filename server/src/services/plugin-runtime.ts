import {
  createHttpClient,
  redactDeep,
  sanitizeMessage,
  secretValues,
  type Clock,
  type PluginContext,
  type PluginLogger,
  type ProviderPlugin,
  type ProviderUsage,
} from '@usage-monitor/core';
import type { Logger } from 'pino';

export interface RuntimeOptions {
  timeoutMs: number;
  /** Host allow-list for plugins that fetch user-supplied URLs (SSRF guard). */
  allowedHosts: readonly string[];
  clock: Clock;
  logger: Logger | PluginLogger;
  signal?: AbortSignal;
}

/** Plugins that take arbitrary URLs from the user declare it, and get the SSRF guard. */
export function needsHostGuard(plugin: Pick<ProviderPlugin, 'capabilities'>): boolean {
  return plugin.capabilities?.user_supplied_urls === true;
}

/** A logger for plugin code that scrubs the connection's secrets from every message and field. */
export function redactingLogger(base: Logger | PluginLogger, secrets: readonly string[]): PluginLogger {
  const log =
    (level: keyof PluginLogger) =>
    (msg: string, fields?: Record<string, unknown>): void => {
      const cleanMsg = sanitizeMessage(msg, secrets);
      const cleanFields = fields ? (redactDeep(fields, secrets) as Record<string, unknown>) : undefined;
      const target = base as unknown as Record<string, (...a: unknown[]) => void>;
      // pino takes (fields, msg); a PluginLogger takes (msg, fields).
      if ('child' in base) target[level]!.call(base, cleanFields ?? {}, cleanMsg);
      else target[level]!.call(base, cleanMsg, cleanFields);
    };
  return { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') };
}

/** Builds the context one plugin call receives; the same code runs in workers and the main thread. */
export function buildPluginContext(
  plugin: ProviderPlugin,
  connection: { credentials: Record<string, unknown>; settings: Record<string, unknown>; baseUrl: string | null },
  opts: RuntimeOptions,
): { ctx: PluginContext; secrets: string[] } {
  const secrets = secretValues(connection.credentials);
  const signal = opts.signal ?? AbortSignal.timeout(opts.timeoutMs);
  const http = createHttpClient({
    timeoutMs: opts.timeoutMs,
    signal,
    secrets,
    clock: opts.clock,
    userAgent: 'usage-monitor/0.1 (+self-hosted)',
    ...(needsHostGuard(plugin) ? { hostPolicy: { allowedHosts: opts.allowedHosts } } : {}),
  });
  const baseUrl = (connection.baseUrl || plugin.defaultBaseUrl).replace(/\/+$/, '');
  return {
    secrets,
    ctx: {
      credentials: connection.credentials,
      settings: connection.settings,
      baseUrl,
      http,
      clock: opts.clock,
      signal,
      logger: redactingLogger(opts.logger, secrets),
    },
  };
}

/** Removes secrets from what a plugin returned before it is stored or sent anywhere. */
export function scrubUsage(usage: ProviderUsage, secrets: readonly string[]): ProviderUsage {
  // Rotated credentials are secrets too: they travel only in `credentials`, never in raw or summary.
  const all = usage.credentials ? [...secrets, ...secretValues(usage.credentials)] : secrets;
  return {
    ...usage,
    summary: typeof usage.summary === 'string' ? sanitizeMessage(usage.summary, all) : usage.summary,
    raw: usage.raw === undefined ? {} : redactDeep(usage.raw, all),
  };
}
