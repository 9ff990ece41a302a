import type { PluginContext, HttpClient, Clock, PluginLogger } from './context.js';
import type { MetricSpec } from './metric-spec.js';
import type { Metric, NativeBucket } from '../domain/metrics.js';

export type JsonSchema = Record<string, unknown>;

export interface ProviderUsage {
  status: 'healthy' | 'degraded';
  summary: string;
  metrics: Metric[];
  /** Provider-native history buckets (daily costs, hourly tokens), upserted by their window. */
  native?: NativeBucket[];
  /** The upstream payload with every secret removed; stored with the snapshot. */
  raw?: unknown;
  /** Rotated credentials (OAuth refresh) to persist with the snapshot, atomically. */
  credentials?: Record<string, unknown>;
}

/** The context of an OAuth flow step: no stored credentials yet, only the plugin's settings. */
export interface OAuthContext<Settings = Record<string, unknown>> {
  settings: Settings;
  baseUrl: string;
  http: HttpClient;
  clock: Clock;
  signal: AbortSignal;
  logger: PluginLogger;
}

export interface DeviceFlowStart {
  /** Opaque state the server keeps (never returned to the client) and hands back to `poll`. */
  state: Record<string, unknown>;
  user_code: string;
  verification_uri: string;
  verification_uri_complete?: string | null;
  expires_in_seconds: number;
  interval_seconds: number;
}

export type OAuthFlowStatus = 'pending' | 'slow_down' | 'complete' | 'expired' | 'denied' | 'error';

export interface OAuthStepResult {
  status: OAuthFlowStatus;
  /** The connection's credentials when `status` is `complete`. */
  credentials?: Record<string, unknown>;
  /** Updated opaque state, when the flow needs to carry something to the next poll. */
  state?: Record<string, unknown>;
  interval_seconds?: number;
  error?: string;
}

export interface OAuthDeviceFlow {
  start(ctx: OAuthContext): Promise<DeviceFlowStart>;
  poll(ctx: OAuthContext, state: Record<string, unknown>): Promise<OAuthStepResult>;
}

export interface BrowserFlowStart {
  state: Record<string, unknown>;
  authorization_url: string;
  redirect_uri: string;
  expires_in_seconds: number;
}

export interface OAuthBrowserFlow {
  start(ctx: OAuthContext): Promise<BrowserFlowStart>;
  /** `callback` is the full redirect URL the user pasted back (it carries `code` and `state`). */
  complete(ctx: OAuthContext, state: Record<string, unknown>, callback: string): Promise<OAuthStepResult>;
}

export type ProviderAuth =
  | { kind: 'api_key' }
  | { kind: 'oauth'; device?: OAuthDeviceFlow; browser?: OAuthBrowserFlow };

export interface ProviderCapabilities {
  native_history?: boolean;
  /** The plugin's metrics are defined by each connection's settings; it implements `metricsFor`. */
  dynamic_metrics?: boolean;
  [key: string]: boolean | undefined;
}

export interface ProviderPlugin<Credentials = Record<string, unknown>, Settings = Record<string, unknown>> {
  apiVersion: 1;
  kind?: 'provider';
  /** kebab-case, stable: stored in the database. */
  id: string;
  name: string;
  description: string;
  /** An SVG path or a small inline SVG. */
  icon?: string;
  docsUrl?: string;
  /** JSON Schema of the secret part. Secret properties carry `writeOnly: true`. */
  credentials: JsonSchema;
  /** JSON Schema of the non-secret options, with defaults. */
  settings?: JsonSchema;
  defaultBaseUrl: string;
  auth?: ProviderAuth;
  /** Declared metrics by label, in display order. */
  metrics: Record<string, MetricSpec>;
  /**
   * Per-connection metric specs for plugins whose metrics are defined by the connection's settings
   * (declare `capabilities.dynamic_metrics`); when present, the static `metrics` is only a
   * placeholder. Returns the specs by label, in display order, for the given (schema-validated)
   * settings; throws ConfigError when the settings define an inconsistent metric list.
   */
  metricsFor?(settings: Settings): Record<string, MetricSpec>;
  capabilities?: ProviderCapabilities;
  fetchUsage(ctx: PluginContext<Credentials, Settings>): Promise<ProviderUsage>;
  /** Checks credentials; defaults to `fetchUsage`. */
  testCredentials?(ctx: PluginContext<Credentials, Settings>): Promise<ProviderUsage>;
}

/**
 * The metric specs of one connection: `metricsFor(settings)` for plugins with dynamic metrics, else
 * the plugin's declared `metrics`. Every spec lookup by (connection, label) goes through this.
 */
export function specsFor<Settings>(
  plugin: { metrics: Record<string, MetricSpec>; metricsFor?(settings: Settings): Record<string, MetricSpec> },
  settings: Settings,
): Record<string, MetricSpec> {
  return typeof plugin.metricsFor === 'function' ? plugin.metricsFor(settings) : plugin.metrics;
}

/** Declares a provider plugin; a package's default export. */
export function defineProvider<Credentials = Record<string, unknown>, Settings = Record<string, unknown>>(
  plugin: Omit<ProviderPlugin<Credentials, Settings>, 'kind'>,
): ProviderPlugin<Credentials, Settings> {
  return { kind: 'provider', ...plugin };
}
