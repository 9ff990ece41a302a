import type { Logger } from 'pino';
import {
  deserializeError,
  providerUsageSchema,
  serializeError,
  UpstreamError,
  type Clock,
  type ProviderUsage,
} from '@usage-monitor/core';
import type { LoadedProvider } from '../plugins/registry.js';
import { bodyAjv, fieldErrors } from '../http/validation.js';
import { buildPluginContext, scrubUsage } from './plugin-runtime.js';
import type { Settings } from '../config/settings.js';

const validateUsage = bodyAjv.compile(providerUsageSchema);

export interface ConnectionTarget {
  credentials: Record<string, unknown>;
  settings: Record<string, unknown>;
  baseUrl: string | null;
}

/** Checks what a plugin returned; a plugin that breaks its contract is reported, not trusted. */
export function checkUsage(usage: unknown): ProviderUsage {
  if (!validateUsage(usage)) {
    const e = fieldErrors(validateUsage.errors, 'result')[0];
    throw new UpstreamError(`The plugin returned an invalid result: ${e?.path ?? ''} ${e?.message ?? ''}`.trim());
  }
  return usage as ProviderUsage;
}

/**
 * Runs a provider plugin synchronously for a request (credential tests). Polling runs plugins in
 * worker threads instead; this path is bounded by the same timeout.
 */
export class ProviderRunner {
  constructor(
    private readonly settings: Settings,
    private readonly logger: Logger,
    private readonly clock: Clock,
  ) {}

  /**
   * Returns what the API shows plus `rotatedCredentials`: a plugin that refreshed a single-use
   * OAuth token during the test hands back the new one, and it must be kept (see testStored).
   */
  async test(loaded: LoadedProvider, target: ConnectionTarget) {
    const { plugin } = loaded;
    const { ctx, secrets } = buildPluginContext(plugin, target, {
      timeoutMs: this.settings.requestTimeoutSeconds * 1000,
      allowedHosts: this.settings.customHttpAllowedHosts,
      clock: this.clock,
      logger: this.logger.child({ provider: plugin.id }),
    });
    let usage: ProviderUsage;
    try {
      usage = checkUsage(await (plugin.testCredentials ?? plugin.fetchUsage).call(plugin, ctx));
    } catch (err) {
      throw deserializeError(serializeError(err, secrets));
    }
    const clean = scrubUsage(usage, secrets);
    return { status: clean.status, summary: clean.summary, metrics: clean.metrics, raw: clean.raw, rotatedCredentials: usage.credentials };
  }
}
